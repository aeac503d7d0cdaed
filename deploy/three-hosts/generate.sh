#!/usr/bin/env bash
# Generates a three-host deployment of Baton on PostgreSQL (etcd, Patroni,
# HAProxy, Baton on each host) from an inventory: a CA and each host's
# certificate (openssl), random passwords, and each host's config files.
#
#   deploy/three-hosts/generate.sh INVENTORY OUT
#
# OUT/ca/ holds the CA's key (keep it off the hosts) and an operator's
# client certificate; OUT/secrets/ the passwords; OUT/HOST/ the files of
# one host, laid out as they go on it (OUT/db1/etc/baton-ha/...): copy
# OUT/db1/ to / on db1. Running it again keeps the CA and the passwords
# and writes the rest anew. docs/deploy-three-hosts.md tells the steps.
set -euo pipefail

if [ $# -ne 2 ]; then
  echo "usage: $0 INVENTORY OUT" >&2
  exit 2
fi
inventory=$1
out=$2
here=$(cd "$(dirname "$0")" && pwd)
templates=$here/templates

cluster=baton watchdog=required pool=16 move_tasks=2 root=
names=() addrs=()
while read -r key a b rest; do
  case "$key" in
    ''|'#'*) continue ;;
    host) [ -n "$b" ] || { echo "$inventory: host needs a name and an address" >&2; exit 1; }
          names+=("$a"); addrs+=("$b") ;;
    cluster) cluster=$a ;;
    watchdog) watchdog=$a ;;
    pool) pool=$a ;;
    move-tasks) move_tasks=$a ;;
    root) root=$a ;;
    *) echo "$inventory: unknown setting $key" >&2; exit 1 ;;
  esac
  [ -z "${rest:-}" ] || { echo "$inventory: $key: too many fields" >&2; exit 1; }
done < "$inventory"
if [ "${#names[@]}" -ne 3 ]; then
  echo "$inventory: want three hosts, found ${#names[@]}" >&2
  exit 1
fi
case "$watchdog" in required|off) ;; *) echo "$inventory: watchdog is required or off" >&2; exit 1 ;; esac

# max_connections: every Baton node's pool, plus per node the connection
# that LISTENs, the one that sends wake-ups, the one that holds FIFO
# topics' group locks, one per move task and one for a moment at start;
# plus Patroni's own and room for an operator.
nodes=${#names[@]}
per_node=$((pool + 4 + move_tasks))
reserve=20
max_connections=$((nodes * per_node + reserve))

mkdir -p "$out/ca" "$out/secrets"
umask 077

# A password, made once and kept across runs.
secret() {
  local f=$out/secrets/$1
  [ -s "$f" ] || openssl rand -hex 24 > "$f"
  cat "$f"
}
superuser_pw=$(secret postgres.password)
replication_pw=$(secret replicator.password)
rewind_pw=$(secret rewind.password)
baton_pw=$(secret baton-db.password)
if [ ! -s "$out/secrets/baton-credentials" ]; then
  printf '# access-key-id secret-access-key account-id\nAKIA%s %s 000000000000\n' \
    "$(openssl rand -hex 8 | tr a-f A-F)" "$(openssl rand -hex 20)" > "$out/secrets/baton-credentials"
fi

# The CA, made once.
ca=$out/ca
if [ ! -s "$ca/ca.key" ]; then
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 3650 \
    -subj "/CN=$cluster deployment CA" -keyout "$ca/ca.key" -out "$ca/ca.crt" 2>/dev/null
fi

# cert NAME SAN EKU: a key and a certificate signed by the CA, in $ca/NAME.*
cert() {
  local name=$1 san=$2 eku=$3
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$name" \
    -keyout "$ca/$name.key" -out "$ca/$name.csr" 2>/dev/null
  printf 'subjectAltName=%s\nextendedKeyUsage=%s\nbasicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' \
    "$san" "$eku" > "$ca/$name.ext"
  openssl x509 -req -in "$ca/$name.csr" -CA "$ca/ca.crt" -CAkey "$ca/ca.key" -CAcreateserial \
    -days 825 -extfile "$ca/$name.ext" -out "$ca/$name.crt" 2>/dev/null
  rm -f "$ca/$name.csr" "$ca/$name.ext"
}
# The operator's client certificate: patronictl, curl to the REST API.
[ -s "$ca/operator.crt" ] || cert operator "DNS:operator" clientAuth

etcd_hosts= etcd_cluster= pg_peers= haproxy_pg= haproxy_baton= trust=
for i in 0 1 2; do
  n=${names[$i]} a=${addrs[$i]}
  etcd_hosts+="${etcd_hosts:+,}$a:2379"
  etcd_cluster+="${etcd_cluster:+,}$n=https://$a:2380"
  pg_peers+="    - hostssl replication replicator $a/32 scram-sha-256"$'\n'
  pg_peers+="    - hostssl postgres rewind $a/32 scram-sha-256"$'\n'
  pg_peers+="    - hostssl baton baton $a/32 scram-sha-256"$'\n'
  haproxy_pg+="    server $n $a:5432 check port 8008 verifyhost $n"$'\n'
  haproxy_baton+="    server baton-$n $a:9325 check"$'\n'
  trust+="${trust:+,}$a"
done

for i in 0 1 2; do
  n=${names[$i]} a=${addrs[$i]}
  r=${root//\{host\}/$n}
  etc=$r/etc/baton-ha
  dest=$out/$n/etc/baton-ha
  mkdir -p "$dest/tls"
  # One certificate per host, for etcd (client and peer), Patroni's REST
  # API (server, and client of the other members'), PostgreSQL and
  # HAProxy's checks: the host's name and address, and the loopback's
  # (Patroni asks its own PostgreSQL for its replay position through
  # localhost, verifying the certificate as every connection does).
  cert "$n" "DNS:$n,DNS:localhost,IP:$a,IP:127.0.0.1" serverAuth,clientAuth
  cp "$ca/ca.crt" "$dest/tls/ca.crt"
  cp "$ca/$n.crt" "$dest/tls/host.crt"
  # A copy of the key per service, each to be owned by that service's user.
  for svc in etcd postgres; do cp "$ca/$n.key" "$dest/tls/$svc.key"; done
  cat "$ca/$n.crt" "$ca/$n.key" > "$dest/tls/haproxy.pem"
  rm -f "$ca/$n.key"

  for t in etcd.yml patroni.yml haproxy.cfg baton.yaml; do
    PG_PEERS=$pg_peers HAPROXY_PG=$haproxy_pg HAPROXY_BATON=$haproxy_baton awk '
      /@PG_PEERS@/ { printf "%s", ENVIRON["PG_PEERS"]; next }
      /@HAPROXY_PG@/ { printf "%s", ENVIRON["HAPROXY_PG"]; next }
      /@HAPROXY_BATON@/ { printf "%s", ENVIRON["HAPROXY_BATON"]; next }
      { print }' "$templates/$t" |
    sed -e "s|@NAME@|$n|g" -e "s|@ADDR@|$a|g" -e "s|@ETC@|$etc|g" -e "s|@ROOT@|$r|g" \
      -e "s|@CLUSTER@|$cluster|g" -e "s|@ETCD_HOSTS@|$etcd_hosts|g" -e "s|@ETCD_CLUSTER@|$etcd_cluster|g" \
      -e "s|@WATCHDOG@|$watchdog|g" -e "s|@MAX_CONNECTIONS@|$max_connections|g" \
      -e "s|@POOL@|$pool|g" -e "s|@TRUST@|$trust|g" \
      -e "s|@NODES@|$nodes|g" -e "s|@PER_NODE@|$per_node|g" -e "s|@RESERVE@|$reserve|g" \
      > "$dest/$t"
  done
  cp "$templates/bootstrap-baton.sh" "$dest/bootstrap-baton.sh"
  chmod 0755 "$dest/bootstrap-baton.sh"
  # Secrets, each in a file of mode 0600 for the one service that reads it.
  printf 'PATRONI_SUPERUSER_PASSWORD=%s\nPATRONI_REPLICATION_PASSWORD=%s\nPATRONI_REWIND_PASSWORD=%s\n' \
    "$superuser_pw" "$replication_pw" "$rewind_pw" > "$dest/patroni.env"
  printf '%s\n' "$baton_pw" > "$dest/baton-db.password"
  printf 'PGPASSWORD=%s\n' "$baton_pw" > "$dest/baton.env"
  cp "$out/secrets/baton-credentials" "$dest/baton-credentials"
  chmod 0644 "$dest/tls/ca.crt" "$dest/tls/host.crt" "$dest"/*.yml "$dest"/*.yaml "$dest/haproxy.cfg"
done
echo "wrote $out/${names[0]}, $out/${names[1]}, $out/${names[2]} (max_connections $max_connections = $nodes nodes x ($pool pool + 4 + $move_tasks move tasks) + $reserve)"
