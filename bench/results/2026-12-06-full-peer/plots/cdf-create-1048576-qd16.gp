set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'cdf-create-1048576-qd16.png'

set title 'Latency CDF: create 1 MiB QD16'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot 'cdf-create-1048576-qd16.dat' index 0 using 1:2 with lines lw 2 title "blockdev/wz", 'cdf-create-1048576-qd16.dat' index 1 using 1:2 with lines lw 2 title "blockdev/wz-rocksdb", 'cdf-create-1048576-qd16.dat' index 2 using 1:2 with lines lw 2 title "blockdev/wz-nocopy", 'cdf-create-1048576-qd16.dat' index 3 using 1:2 with lines lw 2 title "blockdev/nowz", 'cdf-create-1048576-qd16.dat' index 4 using 1:2 with lines lw 2 title "blockdev/policy-prepare-background", 'cdf-create-1048576-qd16.dat' index 5 using 1:2 with lines lw 2 title "blockdev/policy-pad-inline", 'cdf-create-1048576-qd16.dat' index 6 using 1:2 with lines lw 2 title "prealloc-file/nohide-stale", 'cdf-create-1048576-qd16.dat' index 7 using 1:2 with lines lw 2 title "prealloc-file/fallocate", 'cdf-create-1048576-qd16.dat' index 8 using 1:2 with lines lw 2 title "prealloc-file/written-zeros", 'cdf-create-1048576-qd16.dat' index 9 using 1:2 with lines lw 2 title "prealloc-file/write-zeroes", 'cdf-create-1048576-qd16.dat' index 10 using 1:2 with lines lw 2 title "files/ext4", 'cdf-create-1048576-qd16.dat' index 11 using 1:2 with lines lw 2 title "files/xfs"
