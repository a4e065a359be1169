set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'cdf-create-4096-qd64.png'

set title 'Latency CDF: create 4 KiB QD64'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot 'cdf-create-4096-qd64.dat' index 0 using 1:2 with lines lw 2 title "blockdev/wz", 'cdf-create-4096-qd64.dat' index 1 using 1:2 with lines lw 2 title "blockdev/wz-rocksdb", 'cdf-create-4096-qd64.dat' index 2 using 1:2 with lines lw 2 title "prealloc-file/nohide-stale", 'cdf-create-4096-qd64.dat' index 3 using 1:2 with lines lw 2 title "prealloc-file/fallocate", 'cdf-create-4096-qd64.dat' index 4 using 1:2 with lines lw 2 title "files/ext4", 'cdf-create-4096-qd64.dat' index 5 using 1:2 with lines lw 2 title "files/xfs"
