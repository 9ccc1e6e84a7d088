#!/bin/sh
# Makes throwaway TLS material for tests in DIR (P-256 keys, valid 2 days):
#   ca.{pem,key}        the test CA
#   server.{pem,key}    for localhost and 127.0.0.1, signed by ca
#   named.{pem,key}     only for coordinator.test, signed by ca
#   worker.{pem,key}    a client certificate, signed by ca
#   rogue-ca, rogue     a second CA and a client certificate it signed
# Usage: make_test_certs.sh DIR
set -eu
cd "$1"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1.key" 2>/dev/null; }
ca() { key "$1"; openssl req -x509 -new -key "$1.key" -out "$1.pem" -days 2 -subj "/CN=$1"; }
leaf() {  # leaf NAME CA [SAN]
  key "$1"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$1"
  if [ -n "${3:-}" ]; then printf 'subjectAltName=%s\n' "$3" > "$1.ext"; else : > "$1.ext"; fi
  openssl x509 -req -in "$1.csr" -CA "$2.pem" -CAkey "$2.key" -CAcreateserial \
    -out "$1.pem" -days 2 -extfile "$1.ext" 2>/dev/null
}
ca ca
leaf server ca DNS:localhost,IP:127.0.0.1
leaf named ca DNS:coordinator.test
leaf worker ca
ca rogue-ca
leaf rogue rogue-ca
