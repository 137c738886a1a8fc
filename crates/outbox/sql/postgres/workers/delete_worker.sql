DELETE FROM workers WHERE id = $1
