set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'aging-ratio.png'

set title 'Aged store (90% full, fragmented) against fresh: ops/s ratio (1 = no change)'
set style data histograms
set style histogram clustered gap 2
set style fill solid 0.8 border -1
set ylabel 'aged / fresh ops/s'
set yrange [0:*]
set xtics rotate by -30 scale 0 font ',9'
set key outside right top
set grid ytics
set bmargin 8
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb 'black'
plot for [i=2:3] 'aging-ratio.dat' using i:xtic(1) title columnheader(i)
