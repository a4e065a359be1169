set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'alloc-first-writes-cdf.png'

set title 'First 4 KiB O_DIRECT|O_DSYNC writes into prepared space: latency CDF'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of writes at or below'
set key bottom right
set grid
plot 'alloc-first-writes-cdf.dat' index 0 using 1:2 with linespoints title "ext4-nohide-stale", 'alloc-first-writes-cdf.dat' index 1 using 1:2 with linespoints title "ext4-fallocate", 'alloc-first-writes-cdf.dat' index 2 using 1:2 with linespoints title "ext4-written-zeros", 'alloc-first-writes-cdf.dat' index 3 using 1:2 with linespoints title "ext4-write-zeroes", 'alloc-first-writes-cdf.dat' index 4 using 1:2 with linespoints title "provision-loop", 'alloc-first-writes-cdf.dat' index 5 using 1:2 with linespoints title "provision-dm-thin", 'alloc-first-writes-cdf.dat' index 6 using 1:2 with linespoints title "blockdev-zero-range-wz", 'alloc-first-writes-cdf.dat' index 7 using 1:2 with linespoints title "blockdev-zero-range-nowz", 'alloc-first-writes-cdf.dat' index 8 using 1:2 with linespoints title "blockdev-punch", 'alloc-first-writes-cdf.dat' index 9 using 1:2 with linespoints title "blockdev-write-zeroes", 'alloc-first-writes-cdf.dat' index 10 using 1:2 with linespoints title "blockdev-none"
