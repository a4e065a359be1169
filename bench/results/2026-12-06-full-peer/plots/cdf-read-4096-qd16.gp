set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'cdf-read-4096-qd16.png'

set title 'Latency CDF: read 4 KiB QD16'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot 'cdf-read-4096-qd16.dat' index 0 using 1:2 with lines lw 2 title "blockdev/wz"
