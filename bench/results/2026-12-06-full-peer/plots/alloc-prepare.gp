set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'alloc-prepare.png'

set title 'Time to prepare space, by path and size (durable; lower is better)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set ylabel 'milliseconds (log)'
set xtics rotate by -30 scale 0
set key top left
set grid ytics
set bmargin 8
plot for [i=2:4] 'alloc-prepare.dat' using i:xtic(1) title columnheader(i)
