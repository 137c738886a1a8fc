DELETE FROM customers WHERE id = $1
