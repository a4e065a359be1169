set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'cdf-remove-1048576-qd1.png'

set title 'Latency CDF: remove 1 MiB QD1'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot 'cdf-remove-1048576-qd1.dat' index 0 using 1:2 with lines lw 2 title "blockdev/dm-thin"
