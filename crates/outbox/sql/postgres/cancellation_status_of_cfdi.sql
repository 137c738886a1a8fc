SELECT cancellation_status FROM cfdis WHERE id = $1
