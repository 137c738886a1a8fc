SELECT current_setting('server_version')
