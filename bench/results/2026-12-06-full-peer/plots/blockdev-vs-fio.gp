set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'blockdev-vs-fio.png'

set title 'blockdev against fio on the same kind of device (ops/s for 4 KiB, MB/s for 1 MiB)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set logscale y
set xtics rotate by -25 scale 0 font ',9'
set key top left
set grid ytics
set bmargin 8
set rmargin 12
plot 'blockdev-vs-fio.dat' using 2:xtic(1) title 'rawstore blockdev', '' using 3 title 'fio'
