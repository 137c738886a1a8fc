SELECT xml FROM foreign_cfdis WHERE id = $1
