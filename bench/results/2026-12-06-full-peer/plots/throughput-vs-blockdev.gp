set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'throughput-vs-blockdev.png'

set title 'Throughput relative to blockdev (ops/s ratio; 1 = same as blockdev; log scale)'
set style data histograms
set style histogram clustered gap 2
set style fill solid 0.8 border -1
set logscale y
set ylabel 'ratio to blockdev/wz (log)'
set xtics rotate by -40 scale 0 font ',9'
set key outside right top
set grid ytics
set bmargin 9
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
plot for [i=2:13] 'throughput-vs-blockdev.dat' using i:xtic(1) title columnheader(i)
