SELECT body_format, body FROM attempts WHERE id = $1
