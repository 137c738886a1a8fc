-- A consistent snapshot of the whole database (one read transaction) into a new file.
VACUUM INTO ?
