#!/bin/sh
# libtrainer's allreduce against OpenMPI's MPI_Allreduce: same sizes, same
# ranks (NP, default 3, on this machine over TCP loopback), best of 5 rounds
# each, alternated. Target: ratio >= 0.95 at every size.
#   sh bench/allreduce.sh            (after make)
set -eu
BUILD=${BUILD:-build}
NP=${NP:-3}
out=$BUILD/bench
mkdir -p "$out"
PKG_CONFIG_PATH=$PWD/$BUILD/lib/pkgconfig
export PKG_CONFIG_PATH
# shellcheck disable=SC2046
cc -O2 -o "$out/allreduce" bench/allreduce.c $(mpicc --showme:compile) \
	$(pkg-config --cflags --libs trainer)
echo "command: mpirun -np $NP $out/allreduce"
mpirun --allow-run-as-root --oversubscribe -np "$NP" -mca btl self,tcp \
	-mca btl_tcp_if_include lo -mca oob_tcp_if_include lo "$out/allreduce"
