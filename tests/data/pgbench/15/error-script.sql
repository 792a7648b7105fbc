SELECT * FROM no_such_table;
