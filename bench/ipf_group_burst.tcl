# ns-2.35 peer of traces/ipf-group-burst.yaml at K = 4 (issue 24), for bench/sim_speed.py's sim_vs_ns2.
#
#   ns bench/ipf_group_burst.tcl OUT_DIR [SECONDS]     (default 25 s, the scenario's duration)
#
# The same network and load as the scenario file (its parameters, one by one):
#   ch1..ch4 -10 Mb/s, 40 ms- gw;  c1..c9 -10 Mb/s, 39..47 ms- gw  (drop-tail 1000 each way)
#   gw -10 Mb/s, 1 ms- bs_old;  gw - bs_new;  bs_old - bs_new        (drop-tail 1000 each way)
#   old cell: bs_old -> 20 Mb/s, 3 ms, drop-tail 100 -> mh1..mh4 (uplinks 20 Mb/s, 3 ms, 100)
#   new cell: bs_new -> 2 Mb/s, 3 ms, RED (limit 300, min_th 80, max_th 160, max_p 0.02, w_q 0.002,
#             mean packet 1000 B) -> b1..b9 and, after the handoff, mh1..mh4 (uplinks 2 Mb/s, 3 ms, 100)
#   TCP Reno everywhere, 512-byte segments with timestamps, window 64, IW 1, min RTO 1 s, no delayed
#   ACKs, no SACK: m_i = ch_i -> mh_i, bg_i = c_i -> b_i, all from t = 0.
#   Handoff of the four MHs together at 12 s with a 50 ms outage; then the old BS flushes its IPF buffer:
#   64 packets per MH, sent at once towards the new BS (one window each, as the simulator's flush).
#   Outputs, as `p4handoff run` writes them: every sender's cwnd trace (a line per change) and the new
#   cell's queue length and RED average every 10 ms.
#
# Differences from the simulator, none of which changes the amount of work much: the cell's shared
# downlink is a node (the RED link into it, ideal 1 Gb/s hops out of it); ns-2's one-way TCP has no
# handshake and no FIN; the flush is a UDP burst (ns-2 has no IPF), and what was in flight on the old
# cell is lost instead of buffered; routes are recomputed at the link changes (Session routing).
if {$argc < 1} {
    puts stderr "usage: ns ipf_group_burst.tcl OUT_DIR \[SECONDS\]"
    exit 2
}
set out [lindex $argv 0]
set duration [expr {$argc > 1 ? [lindex $argv 1] : 25.0}]
set K 4
set NBG 9
set handoff 12.0
set outage 0.05

set ns [new Simulator]
$ns rtproto Session

Agent/TCP set packetSize_ 512
Agent/TCP set window_ 64
Agent/TCP set windowInit_ 1
Agent/TCP set minrto_ 1.0
Agent/TCP set timestamps_ true
Agent/TCP set tcpTick_ 0.001
Agent/TCP set maxburst_ 0

Queue/RED set thresh_ 80
Queue/RED set maxthresh_ 160
Queue/RED set linterm_ 50
Queue/RED set q_weight_ 0.002
Queue/RED set mean_pktsize_ 1000
Queue/RED set bytes_ false
Queue/RED set queue_in_bytes_ false
Queue/RED set gentle_ false
Queue/RED set wait_ false
Queue/RED set setbit_ false

proc wire {a b delay} {
    global ns
    $ns duplex-link $a $b 10Mb $delay DropTail
    $ns queue-limit $a $b 1000
    $ns queue-limit $b $a 1000
}

set gw [$ns node]
set bs_old [$ns node]
set bs_new [$ns node]
set cell_old [$ns node]
set cell_new [$ns node]
wire $gw $bs_old 1ms
wire $gw $bs_new 1ms
wire $bs_old $bs_new 1ms

# a cell: the BS's downlink queue into the cell node, ideal hops to the hosts, an uplink per host
$ns simplex-link $bs_old $cell_old 20Mb 3ms DropTail
$ns queue-limit $bs_old $cell_old 100
$ns simplex-link $bs_new $cell_new 2Mb 3ms RED
$ns queue-limit $bs_new $cell_new 300
proc member {cell bs host rate} {
    global ns
    $ns duplex-link $cell $host 1Gb 0ms DropTail
    $ns duplex-link $host $bs $rate 3ms DropTail
    $ns queue-limit $host $bs 100
    $ns cost $bs $host 1000          ;# the downlink goes through the cell's shared queue
    $ns cost $host $cell 1000        ;# the uplink goes straight to the BS
}

set files {}
proc sender {name src dst} {
    global ns out files
    set tcp [new Agent/TCP/Reno]
    set sink [new Agent/TCPSink]
    $ns attach-agent $src $tcp
    $ns attach-agent $dst $sink
    $ns connect $tcp $sink
    set f [open "$out/trace-$name.tr" w]
    lappend files $f
    $tcp attach $f
    $tcp trace cwnd_
    set ftp [new Application/FTP]
    $ftp attach-agent $tcp
    $ns at 0.0 "$ftp start"
}

for {set i 1} {$i <= $K} {incr i} {
    set ch($i) [$ns node]
    wire $ch($i) $gw 40ms
    set mh($i) [$ns node]
    member $cell_old $bs_old $mh($i) 20Mb
    member $cell_new $bs_new $mh($i) 2Mb
    $ns rtmodel-at 1e-6 down $cell_new $mh($i)
    $ns rtmodel-at 1e-6 down $mh($i) $bs_new
    sender m$i $ch($i) $mh($i)
}
for {set i 1} {$i <= $NBG} {incr i} {
    set c($i) [$ns node]
    wire $c($i) $gw [expr {39 + $i - 1}]ms
    set b($i) [$ns node]
    member $cell_new $bs_new $b($i) 2Mb
    sender bg$i $c($i) $b($i)
}

# the group handoff, then the old BS's flush (64 packets per MH)
for {set i 1} {$i <= $K} {incr i} {
    $ns rtmodel-at $handoff down $cell_old $mh($i)
    $ns rtmodel-at $handoff down $mh($i) $bs_old
    $ns rtmodel-at [expr {$handoff + $outage}] up $cell_new $mh($i)
    $ns rtmodel-at [expr {$handoff + $outage}] up $mh($i) $bs_new
    set udp($i) [new Agent/UDP]
    $udp($i) set packetSize_ 564
    $ns attach-agent $bs_old $udp($i)
    set null($i) [new Agent/Null]
    $ns attach-agent $mh($i) $null($i)
    $ns connect $udp($i) $null($i)
    set flush($i) [new Application/Traffic/CBR]
    $flush($i) attach-agent $udp($i)
    $flush($i) set packetSize_ 564
    $flush($i) set rate_ 10Mb
    $flush($i) set maxpkts_ 64
    $ns at [expr {$handoff + $outage}] "$flush($i) start"
}

# the new cell's queue every 10 ms (length and RED average), as the simulator's QueueSampler
set qfile [open "$out/queues.tr" w]
set red [[$ns link $bs_new $cell_new] queue]
set qmon [$ns monitor-queue $bs_new $cell_new ""]
proc sample {} {
    global ns qfile qmon red
    set now [$ns now]
    puts $qfile "$now [$qmon set pkts_] [$red set ave_]"
    $ns at [expr {$now + 0.01}] sample
}
$ns at 0.0 sample

proc finish {} {
    global files qfile
    foreach f $files { close $f }
    close $qfile
    exit 0
}
$ns at $duration finish
$ns run
