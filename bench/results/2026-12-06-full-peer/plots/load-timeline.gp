set terminal pngcairo noenhanced size 1100,650 font 'DejaVu Sans,10'
set output 'load-timeline.png'

set title 'Sustained load: operations completed per second'
set xlabel 'second of the run'
set ylabel 'operations per second'
set yrange [0:*]
set key bottom right
set grid
plot 'load-timeline.dat' index 0 using 1:2 with linespoints title "blockdev/wz rep 1", 'load-timeline.dat' index 1 using 1:2 with linespoints title "blockdev/wz rep 2", 'load-timeline.dat' index 2 using 1:2 with linespoints title "blockdev/wz rep 3"
