cat ../1.96/pkb-bonnie-plus-plus-sample.csv forum-kvm-ide-virtio-host.csv ../2.00a/csv-s64m-n1.stdout > mixed-1.96-1.03c-2.00a.csv
# a results file as users keep them (rows of several bonnie++ versions appended to one file), made by concatenating three real captures byte for byte: 1 row of 1.96 (48 fields), 3 rows of 1.03c (27 fields), 1 row of 2.00a (format 1.98, 50 fields)
