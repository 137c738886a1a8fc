PRAGMA quick_check(10)
