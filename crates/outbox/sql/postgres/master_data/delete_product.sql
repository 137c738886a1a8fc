DELETE FROM products WHERE id = $1
