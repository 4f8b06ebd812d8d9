#!/usr/bin/env bash
# netcluster.sh - an emulated cluster of K nodes on this one machine.
#
# Each node is a network namespace (NAME-node0, NAME-node1, ...; NAME is "sc"
# unless --name says otherwise). Ranks inside a node talk over shared memory
# (OpenMPI's vader BTL: network namespaces do not separate /dev/shm); ranks on
# different nodes talk TCP over the node's one "NIC": a veth pair from the
# node's eth0 to a port of a bridge in a hub namespace (NAME-hub). Both
# directions of every NIC are shaped with a token bucket (tc tbf) to --rate:
# the node's eth0 egress (node -> switch) and the hub port's egress (switch
# -> node), so a node sends and receives at most --rate, like a NIC on a
# non-blocking switch. netem is not available here, so no added latency.
#
# Addresses are private and exist only inside the namespaces this script makes:
# node i is 10.77.0.(i+1)/24, the hub's bridge is 10.77.0.254. The root
# namespace gets no interface, route or address; nothing can leave the
# emulated cluster. Namespaces of different --name's are isolated from each
# other, so two clusters can reuse the same subnet.
#
# mpirun runs in the hub namespace (so every node is "remote" to it) and starts
# one orted per node through this script's `rsh` subcommand, which maps a
# node's address to its namespace and runs the command there with
# `ip netns exec`, in a UTS namespace of its own whose host name is the
# node's (NAME-nodeI): Open MPI names its session directory and vader's
# shared-memory segments after the host name, and two nodes sharing one
# crash each other (a segfault in mca_btl_vader_poll_handle_frag with 2
# ranks on each of 2 nodes). OpenMPI's TCP BTL and out-of-band channel are
# restricted to the cluster subnet; no tree spawn.
#
# Nodes get cores of their own: `up` splits the CPUs this script may use
# among the nodes (--cores-per-node, default CPUs / nodes) and the agent
# starts each orted under `taskset` with its node's cores; mpirun runs with
# --bind-to none so that ranks keep their orted's cores. Without both, every
# orted sees all of the machine's cores and binds its first rank to core 0,
# so one rank per node puts every rank on core 0 (measured: F and B ops
# 1.8x slower than the same plan under a plain mpirun on 2 cores).
#
# Needs root (every subcommand), iproute2 and unshare (util-linux). Every subcommand is idempotent; `down` removes
# everything `up` made (namespaces, veths, the bridge, the state directory),
# and `up` cleans up after itself if any step fails.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
PROG=netcluster.sh
SUBNET=10.77.0
HUB_ADDR=$SUBNET.254
MAX_NODES=64
STATE_ROOT=${SC_NETCLUSTER_STATE:-/run/stagecraft-netcluster}

usage() {
  cat <<EOF
usage: scripts/$PROG [--name NAME] COMMAND [OPTIONS]

An emulated cluster on this machine: one network namespace per node, nodes
joined by veth links to a bridge, each link shaped to a rate with tc tbf.

commands:
  up [--nodes K] [--rate R] [--slots S] [--cores-per-node C] [--pace]
        make K nodes (default 2, at most $MAX_NODES) whose links run at R
        (tc units: 100mbit, 1gbit, 10gbit; default 1gbit); S is the slot
        count per node in the hostfile (default 1); C is how many of this
        machine's CPUs each node's processes may run on (default CPUs / K,
        at least 1; nodes share CPUs only when K x C exceeds the CPUs, and
        'up' says so). --pace shapes like a wire: no message, however
        small, passes faster than R (by default one under the token
        bucket, 64 KiB at 1gbit, passes at memory speed). Replaces a
        cluster of the same name that is already up.
  run [--np N] [--map-by slot|node] [--dry-run] -- COMMAND [ARGS...]
        run COMMAND under mpirun across the nodes (N defaults to nodes x
        slots; slot mapping fills node0 first). Prints the mpirun line.
  status
        nodes, addresses, qdiscs and the hostfile; exit 1 if not up.
  down
        remove everything 'up' made. Idempotent.
  rsh HOST COMMAND...
        the rsh agent mpirun calls (HOST is a node address or node name).

options:
  --name NAME   prefix of the namespaces (default sc: sc-node0, sc-hub)
  --help        this text

example (as root):
  scripts/$PROG up --nodes 2 --rate 1gbit
  scripts/$PROG run --np 2 -- bin/stagecraft bench p2p --sizes 1M:64M:4
  scripts/$PROG down

Node i has address $SUBNET.(i+1) and namespace NAME-node<i>; the hub's bridge
is $HUB_ADDR in NAME-hub. State lives in $STATE_ROOT/NAME.
EOF
}

die() { echo "$PROG: $*" >&2; exit 2; }

NAME=${SC_NETCLUSTER_NAME:-sc}

# ---- helpers -------------------------------------------------------------------

need_root() {
  [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces and tc)"
  command -v ip >/dev/null || die "needs iproute2 (ip)"
  command -v tc >/dev/null || die "needs iproute2 (tc)"
  command -v unshare >/dev/null || die "needs unshare (util-linux)"
}

hub() { echo "$NAME-hub"; }
node() { echo "$NAME-node$1"; }
state_dir() { echo "$STATE_ROOT/$NAME"; }

# Rate in tc units -> bits per second (integer). Accepts bit, kbit, mbit,
# gbit, tbit and bps, kbps, mbps, gbps (bytes), as tc does (k = 1000).
rate_bits() {
  local r=${1,,} num unit mul
  [[ $r =~ ^([0-9]+(\.[0-9]+)?)([a-z]*)$ ]] || return 1
  num=${BASH_REMATCH[1]}; unit=${BASH_REMATCH[3]}
  case $unit in
    ''|bit) mul=1 ;; kbit) mul=1000 ;; mbit) mul=1000000 ;;
    gbit) mul=1000000000 ;; tbit) mul=1000000000000 ;;
    bps) mul=8 ;; kbps) mul=8000 ;; mbps) mul=8000000 ;; gbps) mul=8000000000 ;;
    *) return 1 ;;
  esac
  awk -v n="$num" -v m="$mul" 'BEGIN { printf "%.0f\n", n * m }'
}

# Shapes egress of DEV in namespace NS to RATE with a token bucket (tc tbf)
# whose burst holds 250 us at the rate (at least 64 KiB so a GSO segment
# fits) and whose queue holds 20 ms. A message smaller than the burst can
# pass at memory speed: at 1gbit the bucket is 64 KiB, at 10gbit 312 KB. A
# larger bucket (2 ms) let 8 MiB messages through at 12.5 Gbit/s on a 10gbit
# link.
#
# With PACE=1 (up --pace) it shapes like a wire instead: a second bucket of
# one packet, emptied at 1% above the rate (tbf's peakrate, which must exceed
# the rate), paces even a full first bucket, and the veth ends send and
# merge (GSO, GRO) packets of at most SEG bytes, so what an idle link lets
# through at memory speed is one small packet. Measured at 1gbit: a 64 KiB
# p2p message 622 us paced against 271 us unpaced (524 us at the rate), and
# 0.86 against 0.95 Gbit/s at 16 MiB (the pacing's own cost).
PACE=0
SEG=8192
shape() {
  local ns=$1 dev=$2 rate=$3 bits burst
  bits=$(rate_bits "$rate")
  burst=$(( bits / 8 / 4000 )); (( burst < 65536 )) && burst=65536
  if (( PACE )); then
    ip -n "$ns" link set "$dev" gso_max_size "$SEG" gro_max_size "$SEG" \
      || die "--pace: cannot limit $dev's packets to $SEG bytes (ip link set gso_max_size, gro_max_size)"
    tc -n "$ns" qdisc replace dev "$dev" root tbf rate "${bits}bit" burst "$burst" latency 20ms \
      peakrate "$(( bits + bits / 100 ))bit" mtu $(( SEG + 1024 ))
  else
    tc -n "$ns" qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency 20ms
  fi
}

# Its arguments as one line a shell reads back as the same words.
shell_words() {
  local a out=() q="'"
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./:=,@%+-]+$ ]]; then out+=("$a")
    else out+=("'${a//$q/$q\\$q$q}'"); fi
  done
  echo "${out[*]}"
}

# The CPUs this process may run on, as a space-separated list of numbers.
allowed_cpus() {
  local spec part a b out=()
  spec=$(awk '/^Cpus_allowed_list:/ { print $2 }' /proc/self/status)
  [[ -n $spec ]] || spec=0-$(( $(nproc --all) - 1 ))
  IFS=, read -r -a parts <<< "$spec"
  for part in "${parts[@]}"; do
    if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
      for (( a = BASH_REMATCH[1], b = BASH_REMATCH[2]; a <= b; a++ )); do out+=("$a"); done
    else
      out+=("$part")
    fi
  done
  echo "${out[*]}"
}

ns_exists() { ip netns list 2>/dev/null | awk '{print $1}' | grep -qx "$1"; }

# Every namespace of this cluster's name, up or half made.
our_namespaces() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^$NAME-(hub|node[0-9]+)\$" || true
}

# ---- down ------------------------------------------------------------------------

cmd_down() {
  need_root
  local ns
  # Deleting a namespace deletes the veth ends in it, their peers, the
  # bridge and the qdiscs; processes still inside keep it alive, so kill them.
  for ns in $(our_namespaces); do
    local pids
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [[ -n $pids ]] && kill $pids 2>/dev/null || true
  done
  for ns in $(our_namespaces); do
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$(state_dir)"
  if [[ -n $(our_namespaces) ]]; then
    echo "$PROG: could not remove: $(our_namespaces | tr '\n' ' ')" >&2
    return 1
  fi
  return 0
}

# ---- up --------------------------------------------------------------------------

cmd_up() {
  local nodes=2 rate=1gbit slots=1 cpn=
  while [[ $# -gt 0 ]]; do
    case $1 in
      --nodes) nodes=${2:-}; shift 2 || die "--nodes needs a value" ;;
      --cores-per-node) cpn=${2:-}; shift 2 || die "--cores-per-node needs a value" ;;
      --rate) rate=${2:-}; shift 2 || die "--rate needs a value" ;;
      --slots) slots=${2:-}; shift 2 || die "--slots needs a value" ;;
      --pace) PACE=1; shift ;;
      --help|-h) usage; exit 0 ;;
      *) die "up: unknown option '$1'" ;;
    esac
  done
  [[ $nodes =~ ^[0-9]+$ ]] && (( nodes >= 1 && nodes <= MAX_NODES )) \
    || die "up: --nodes '$nodes' must be an integer in [1, $MAX_NODES]"
  [[ $slots =~ ^[0-9]+$ ]] && (( slots >= 1 && slots <= 1024 )) \
    || die "up: --slots '$slots' must be an integer in [1, 1024]"
  [[ -z $cpn || $cpn =~ ^[1-9][0-9]{0,4}$ ]] \
    || die "up: --cores-per-node '$cpn' must be a positive integer"
  local bits
  bits=$(rate_bits "$rate") && (( bits >= 8000 )) \
    || die "up: --rate '$rate' is not a tc rate of at least 8kbit (e.g. 100mbit, 1gbit)"
  need_root
  command -v taskset >/dev/null || die "needs taskset (util-linux)"
  local cpus ncpu
  read -r -a cpus <<< "$(allowed_cpus)"
  ncpu=${#cpus[@]}
  (( ncpu >= 1 )) || die "up: cannot read the CPUs this process may use"
  if [[ -z $cpn ]]; then
    cpn=$(( ncpu / nodes )); (( cpn < 1 )) && cpn=1
  fi
  [[ $cpn =~ ^[0-9]+$ ]] && (( cpn >= 1 && cpn <= ncpu )) \
    || die "up: --cores-per-node '$cpn' must be an integer in [1, $ncpu] (the CPUs this machine lets it use)"
  local shared=
  (( nodes * cpn > ncpu )) && shared=" (nodes share CPUs: $nodes x $cpn > $ncpu)"

  cmd_down >/dev/null 2>&1 || true
  # Any failure from here on (set -e), or an interrupt, removes what was made.
  UP_OK=0 FAILED_CMD=
  set -E
  trap 'FAILED_CMD=$BASH_COMMAND' ERR
  trap 'if [[ $UP_OK != 1 ]]; then echo "$PROG: up failed${FAILED_CMD:+ at: $FAILED_CMD}; cleaning up" >&2; cmd_down >/dev/null 2>&1; fi' EXIT
  trap 'exit 130' INT TERM

  local h; h=$(hub)
  ip netns add "$h"
  ip -n "$h" link set lo up
  ip -n "$h" link add br0 type bridge
  ip -n "$h" addr add "$HUB_ADDR/24" dev br0
  ip -n "$h" link set br0 up
  local i n
  for (( i = 0; i < nodes; i++ )); do
    n=$(node "$i")
    ip netns add "$n"
    ip -n "$n" link set lo up
    # Both ends are created inside the namespaces: the root namespace never
    # sees them.
    ip link add "p$i" netns "$h" type veth peer name eth0 netns "$n"
    ip -n "$h" link set "p$i" master br0
    ip -n "$h" link set "p$i" up
    ip -n "$n" addr add "$SUBNET.$((i + 1))/24" dev eth0
    ip -n "$n" link set eth0 up
    shape "$n" eth0 "$rate"
    shape "$h" "p$i" "$rate"
  done

  local sd; sd=$(state_dir)
  mkdir -p "$sd"
  : > "$sd/hostfile.tmp"
  for (( i = 0; i < nodes; i++ )); do
    echo "$SUBNET.$((i + 1)) slots=$slots" >> "$sd/hostfile.tmp"
  done
  mv "$sd/hostfile.tmp" "$sd/hostfile"
  {
    printf 'nodes=%s\nrate=%s\nrate_bits=%s\nslots=%s\ncores_per_node=%s\npace=%s\n' \
      "$nodes" "$rate" "$bits" "$slots" "$cpn" "$PACE"
    # node i runs on cpus[(i*C + j) mod n], j < C
    local j list
    for (( i = 0; i < nodes; i++ )); do
      list=
      for (( j = 0; j < cpn; j++ )); do
        list+=${list:+,}${cpus[$(( (i * cpn + j) % ncpu ))]}
      done
      printf 'cores_%d=%s\n' "$i" "$list"
    done
  } > "$sd/config.tmp"
  mv "$sd/config.tmp" "$sd/config"
  UP_OK=1
  trap - ERR EXIT INT TERM
  echo "$PROG: $nodes node(s) up ($NAME-node0..$NAME-node$((nodes - 1)), $SUBNET.1..$SUBNET.$nodes), links shaped to $rate each way, $slots slot(s) and $cpn core(s) per node$shared"
}

load_config() {
  local sd; sd=$(state_dir)
  [[ -f $sd/config ]] || { echo "$PROG: cluster '$NAME' is not up (run: $PROG up)" >&2; exit 1; }
  # shellcheck disable=SC1091
  source "$sd/config"
  ns_exists "$(hub)" || { echo "$PROG: cluster '$NAME' is half made; run: $PROG down" >&2; exit 1; }
}

# ---- status ------------------------------------------------------------------------

cmd_status() {
  [[ ${1:-} == --help || ${1:-} == -h ]] && { usage; exit 0; }
  need_root
  load_config
  local sd i n; sd=$(state_dir)
  echo "cluster $NAME: $nodes node(s), $slots slot(s) and ${cores_per_node:-?} core(s) each, links at $rate ($rate_bits bit/s) each way"
  echo "hub $(hub): bridge br0 $HUB_ADDR/24"
  for (( i = 0; i < nodes; i++ )); do
    n=$(node "$i")
    if ns_exists "$n"; then
      local cv=cores_$i
      printf '  %-12s %-12s cpus %-8s %s\n' "$n" "$SUBNET.$((i + 1))" "${!cv:-all}" \
        "$(tc -n "$n" qdisc show dev eth0 | head -1)"
    else
      printf '  %-12s missing\n' "$n"
    fi
  done
  echo "hostfile $sd/hostfile:"
  sed 's/^/  /' "$sd/hostfile"
}

# ---- run ---------------------------------------------------------------------------

cmd_run() {
  local np= mapby=slot dry=0
  while [[ $# -gt 0 ]]; do
    case $1 in
      --np|-np|-n) np=${2:-}; shift 2 || die "--np needs a value" ;;
      --map-by) mapby=${2:-}; shift 2 || die "--map-by needs a value" ;;
      --dry-run) dry=1; shift ;;
      --help|-h) usage; exit 0 ;;
      --) shift; break ;;
      *) die "run: unknown option '$1' (put the command after --)" ;;
    esac
  done
  [[ $# -gt 0 ]] || die "run: no command (usage: $PROG run [--np N] -- COMMAND...)"
  [[ $mapby == slot || $mapby == node ]] || die "run: --map-by must be slot or node"
  need_root
  command -v mpirun >/dev/null || die "run: mpirun not found (install openmpi-bin)"
  load_config
  [[ -z $np ]] && np=$(( nodes * slots ))
  [[ $np =~ ^[0-9]+$ ]] && (( np >= 1 )) || die "run: --np '$np' must be a positive integer"

  # The TCP BTL and ORTE's out-of-band channel use only the cluster subnet;
  # vader carries traffic between ranks of one node; no tree spawn, so every
  # orted is started from the hub by the agent below.
  local cmd=(mpirun --allow-run-as-root --oversubscribe -np "$np"
    --hostfile "$(state_dir)/hostfile" --map-by "$mapby" --bind-to none
    --mca plm_rsh_agent "$SELF --name $NAME rsh"
    --mca plm_rsh_no_tree_spawn 1
    --mca btl tcp,self,vader --mca btl_tcp_if_include "$SUBNET.0/24"
    --mca btl_tcp_eager_limit 8388608 --mca btl_tcp_rndv_eager_limit 8388608
    --mca btl_tcp_max_send_size 8388608
    --mca oob_tcp_if_include "$SUBNET.0/24"
    "$@")
  echo "+ ip netns exec $(hub) $(shell_words "${cmd[@]}")" >&2
  (( dry )) && return 0
  exec ip netns exec "$(hub)" "${cmd[@]}"
}

# ---- rsh agent ---------------------------------------------------------------------

# Called by mpirun as: AGENT [ssh-style options] HOST COMMAND... where COMMAND
# is meant for a remote shell (OpenMPI quotes its arguments for one), so it is
# joined and handed to sh -c inside the node's namespace.
cmd_rsh() {
  while [[ $# -gt 0 && $1 == -* ]]; do shift; done
  [[ $# -ge 2 ]] || die "rsh: usage: $PROG rsh HOST COMMAND..."
  local host=$1 ns i; shift
  if [[ $host =~ ^${SUBNET//./\\.}\.([0-9]+)$ ]]; then
    i=$(( BASH_REMATCH[1] - 1 ))
  elif [[ $host =~ ^($NAME-)?node([0-9]+)$ ]]; then
    i=${BASH_REMATCH[2]}
  else
    die "rsh: '$host' is not a node of cluster '$NAME'"
  fi
  ns=$(node "$i")
  ns_exists "$ns" || die "rsh: no namespace $ns (is the cluster up?)"
  # The node's cores (see the header); every process the orted starts
  # inherits them.
  local pin=() cv=cores_$i
  load_config
  [[ -n ${!cv:-} ]] && pin=(taskset -c "${!cv}")
  # Its own UTS namespace too, with the node's name as host name: OpenMPI
  # names its session directory and vader's shared-memory segments after
  # the host name, so nodes sharing one would trample each other's files.
  exec "${pin[@]}" ip netns exec "$ns" unshare --uts "$SELF" --name "$NAME" _node "$ns" "$@"
}

# Inside the node's namespaces: set the host name, run the command.
cmd_node() {
  local ns=$1; shift
  hostname "$ns"
  exec /bin/sh -c "$*"
}

# ---- main --------------------------------------------------------------------------

while [[ $# -gt 0 ]]; do
  case $1 in
    --name) NAME=${2:-}; shift 2 || die "--name needs a value" ;;
    --help|-h) usage; exit 0 ;;
    *) break ;;
  esac
done
[[ $NAME =~ ^[a-z][a-z0-9]{0,7}$ ]] || die "--name '$NAME' must be 1-8 lowercase letters or digits, starting with a letter"
[[ $# -gt 0 ]] || { usage >&2; exit 2; }
sub=$1; shift
case $sub in
  up) cmd_up "$@" ;;
  down) [[ ${1:-} == --help ]] && { usage; exit 0; }; cmd_down ;;
  status) cmd_status "$@" ;;
  run) cmd_run "$@" ;;
  rsh) cmd_rsh "$@" ;;
  _node) cmd_node "$@" ;;
  help) usage ;;
  *) die "unknown command '$sub' (try --help)" ;;
esac
