set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'load-cdf.png'

set title 'Sustained load: latency CDF of transactions and reads'
set logscale x
set xlabel 'latency, ms (log)'
set ylabel 'percent of operations at or below'
set key bottom right
set grid
plot 'load-cdf.dat' index 0 using 1:2 with lines lw 2 title "blockdev/wz transactions", 'load-cdf.dat' index 1 using 1:2 with lines lw 2 title "blockdev/wz reads"
