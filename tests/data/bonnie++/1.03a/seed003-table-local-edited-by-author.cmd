# bonnie++ 1.03a (built from source with MinTime changed from 0.5 to 0.01), file size 1G, 16 files (defaults), run in a CentOS 5 VM on VMware ESXi, local disk
# source: /work/shared/seeds/003_faa5ba9444c01ca0.txt lines 444-452 ("===== local =====" block), copied verbatim from the seed
# EDITED BY THE BLOG AUTHOR, not raw tool output: the author says the tables were reformatted ("整形してるので省略") and the "Version 1.03a"/"Machine Size" columns and the CSV line were removed; keep it for reference only, a parser should not rely on this layout
# shows the 1.03 human table: K/sec units in the header, %CP of 100 in Random Create Read (the iscsi blocks in the same seed show 101-102), fractional seeks (200.4)
