set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'cdf-remove-65536-qd16.png'

set title 'Latency CDF: remove 64 KiB QD16'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot 'cdf-remove-65536-qd16.dat' index 0 using 1:2 with lines lw 2 title "blockdev/wz", 'cdf-remove-65536-qd16.dat' index 1 using 1:2 with lines lw 2 title "blockdev/wz-rocksdb", 'cdf-remove-65536-qd16.dat' index 2 using 1:2 with lines lw 2 title "prealloc-file/nohide-stale", 'cdf-remove-65536-qd16.dat' index 3 using 1:2 with lines lw 2 title "prealloc-file/fallocate", 'cdf-remove-65536-qd16.dat' index 4 using 1:2 with lines lw 2 title "files/ext4"
