# k_clock.sh: the guest can measure latency (hrtimers + a real clocksource).
kt_run clock t_clock
