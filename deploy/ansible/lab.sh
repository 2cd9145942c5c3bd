#!/usr/bin/env bash
# A lab of "hosts" on one Linux machine, to try deploy/ansible/attack.yml without a fleet and
# to test it: every generator is a network namespace with its own address and its own sshd,
# the target is `vload origin` in a namespace of its own, and they share one bridge, also in
# a namespace of its own (so no firewall of this machine's sits between them). The machine
# itself is the controller, at the bridge's first address.
#
#   sudo VLOAD=target/release/vload bash deploy/ansible/lab.sh up DIR [GENERATORS]
#   . DIR/env; ansible-playbook -i DIR/inventory.yml -e @DIR/attack-vars.yml deploy/ansible/attack.yml
#   sudo bash deploy/ansible/lab.sh down DIR
#
# `up` writes DIR/inventory.yml (the generators, with a key only this lab's sshds accept),
# DIR/env (ANSIBLE_* settings that keep Ansible's files in DIR; ORIGIN_URL, CONTROLLER) and
# DIR/attack-vars.yml (an attack on the origin). Needs root (namespaces), ip, sshd and
# ssh-keygen (Debian: iproute2, openssh-server). `down` ends the processes `up` started, by
# their PIDs, and removes the namespaces and links.
set -Eeuo pipefail

usage() { echo "usage: lab.sh up DIR [GENERATORS] | lab.sh down DIR" >&2; exit 2; }
[[ $# -ge 2 ]] || usage
action=$1
dir=$2

down() {
    [[ -f $dir/lab ]] || { echo "lab.sh: no lab in $dir" >&2; return 0; }
    # shellcheck source=/dev/null
    . "$dir/lab"
    # The servers it started, and whatever runs in its namespaces: ssh sessions (Ansible's
    # connections outlive the sshd that accepted them), a shard still attacking.
    for ns in $namespaces; do pids="$pids $(ip netns pids "$ns" 2>/dev/null | tr '\n' ' ')"; done
    for pid in $pids; do kill "$pid" 2>/dev/null || true; done
    for pid in $pids; do
        # Gone, or a zombie (an orphan this machine's init has not reaped yet).
        for _ in $(seq 50); do [[ $(ps -o stat= -p "$pid") == [^Z]* ]] || break; sleep 0.1; done
    done
    ip link del "vl$lab-c" 2>/dev/null || true
    for ns in $namespaces; do ip netns del "$ns" 2>/dev/null || true; done
    rm -f "$dir/lab"
}

if [[ $action == down ]]; then
    down
    exit 0
fi
[[ $action == up ]] || usage
generators=${3:-3}
[[ $generators =~ ^[1-9][0-9]?$ ]] || { echo "lab.sh: GENERATORS must be 1 to 99, not '$generators'" >&2; exit 2; }
[[ $(id -u) -eq 0 ]] || { echo "lab.sh: network namespaces need root: run it with sudo" >&2; exit 2; }
export PATH=$PATH:/usr/sbin:/sbin
for tool in ip sshd ssh-keygen; do
    command -v "$tool" >/dev/null || { echo "lab.sh: $tool not found (apt-get install -y iproute2 openssh-server)" >&2; exit 2; }
done
vload=${VLOAD:-$(command -v vload || true)}
[[ -x $vload ]] || { echo "lab.sh: no vload: set VLOAD to a vload build" >&2; exit 2; }
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
[[ ! -f $dir/lab ]] || { echo "lab.sh: $dir already holds a lab: lab.sh down $dir first" >&2; exit 2; }

# A lab number no other lab has: `ip netns add` fails on a name that exists, so it is the lock.
lab=
for n in $(seq 1 250); do
    if err=$(ip netns add "vload-lab-$n" 2>&1); then lab=$n; break; fi
    [[ -e /run/netns/vload-lab-$n ]] || { echo "lab.sh: cannot make a network namespace: $err" >&2; exit 2; }
done
[[ -n $lab ]] || { echo "lab.sh: no free lab number (250 labs exist?)" >&2; exit 2; }
net=10.213.$lab
lan=vload-lab-$lab
namespaces=$lan
pids=
save() { printf 'lab=%s\nnamespaces="%s"\npids="%s"\n' "$lab" "$namespaces" "$pids" > "$dir/lab"; }
save
trap 'echo "lab.sh: setting up failed; tearing down" >&2; down' ERR

ip -n "$lan" link add br0 type bridge
ip -n "$lan" link set br0 up
ip -n "$lan" link set lo up
# plug NAME NAMESPACE ADDRESS: a link from the bridge into the namespace (or this machine).
plug() {
    ip link add "vl$lab-$1" type veth peer name "vl$lab-$1b"
    ip link set "vl$lab-$1b" netns "$lan"
    ip -n "$lan" link set "vl$lab-$1b" master br0 up
    if [[ -n $2 ]]; then
        ip link set "vl$lab-$1" netns "$2"
        ip -n "$2" addr add "$3/24" dev "vl$lab-$1"
        ip -n "$2" link set "vl$lab-$1" up
        ip -n "$2" link set lo up
    else
        ip addr add "$3/24" dev "vl$lab-$1"
        ip link set "vl$lab-$1" up
    fi
}
plug c "" "$net.1"

ip netns add "$lan-o"
namespaces="$namespaces $lan-o"
save
plug o "$lan-o" "$net.2"
ip netns exec "$lan-o" "$vload" origin --listen "$net.2:8080" --threads 1 \
    > "$dir/origin.log" 2>&1 &
pids="$pids $!"
save

ssh-keygen -q -t ed25519 -N '' -C vload-lab -f "$dir/id_ed25519"
cp "$dir/id_ed25519.pub" "$dir/authorized_keys"
ssh-keygen -q -t ed25519 -N '' -C vload-lab-host -f "$dir/host_key"
mkdir -p /run/sshd
hosts=
for ((i = 0; i < generators; i++)); do
    ns=$lan-g$i
    ip netns add "$ns"
    namespaces="$namespaces $ns"
    save
    addr=$net.$((10 + i))
    plug "g$i" "$ns" "$addr"
    mkdir -p "$dir/gen$i"
    cat > "$dir/gen$i/sshd_config" <<EOF
ListenAddress $addr:22
HostKey $dir/host_key
AuthorizedKeysFile $dir/authorized_keys
PidFile $dir/gen$i/sshd.pid
UsePAM no
StrictModes no
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
Subsystem sftp internal-sftp
LogLevel ERROR
EOF
    ip netns exec "$ns" "$(command -v sshd)" -D -e -f "$dir/gen$i/sshd_config" \
        > "$dir/gen$i/sshd.log" 2>&1 &
    pids="$pids $!"
    save
    hosts="$hosts        gen$i: {ansible_host: $addr, vload_bin_dir: $dir/gen$i/bin, vload_work_dir: $dir/gen$i/runs}
"
done
trap - ERR

# Ready when every sshd answers and the origin serves.
ready() {
    for ((i = 0; i < generators; i++)); do
        (exec 3<>"/dev/tcp/$net.$((10 + i))/22") 2>/dev/null || return 1
    done
    (exec 3<>"/dev/tcp/$net.2/8080") 2>/dev/null
}
for _ in $(seq 100); do ready && break; sleep 0.1; done
ready || { echo "lab.sh: the lab's servers did not start (see $dir/*.log, $dir/gen*/sshd.log)" >&2; down; exit 1; }

cat > "$dir/inventory.yml" <<EOF
# The lab's generators (deploy/ansible/lab.sh): namespaces on this machine, each with its sshd.
all:
  vars:
    ansible_user: ${SUDO_USER:-$(id -un)}
    ansible_ssh_private_key_file: $dir/id_ed25519
    ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o IdentitiesOnly=yes
    ansible_python_interpreter: $(if [[ -x /usr/bin/python3 ]]; then echo /usr/bin/python3; else command -v python3; fi)
  children:
    generators:
      hosts:
$hosts
EOF
cat > "$dir/attack-vars.yml" <<EOF
vload_binary: $vload
vload_url: http://$net.2:8080/
vload_attack_args: [-r, "600", -d, 5s, --label, lab]
vload_results_dir: $dir/results
vload_start_delay: 10
EOF
cat > "$dir/env" <<EOF
export ANSIBLE_LOCAL_TEMP=$dir/ansible/local
export ANSIBLE_REMOTE_TEMP=$dir/ansible/remote
export ANSIBLE_ASYNC_DIR=$dir/ansible/async
export ANSIBLE_SSH_CONTROL_PATH_DIR=$dir/ansible/cp
export ANSIBLE_HOST_KEY_CHECKING=False
export ANSIBLE_RETRY_FILES_ENABLED=False
export ORIGIN_URL=http://$net.2:8080/
export CONTROLLER=$net.1
EOF
# Under sudo, the files are the user's who runs Ansible (the key must be theirs to read).
if [[ -n ${SUDO_UID:-} ]]; then chown -R "$SUDO_UID:${SUDO_GID:-$SUDO_UID}" "$dir"; fi
echo "lab $lab: controller $net.1, origin http://$net.2:8080/, $generators generators $net.10-$((9 + generators)) (inventory $dir/inventory.yml)"
