#ifndef AGENT_MPI_H
#define AGENT_MPI_H

/* `trainagent rsh ...` and `trainagent mpi-worker ...` (agent/mpi.c). */

int agent_rsh_main(int argc, char **argv);
int agent_mpi_worker_main(int argc, char **argv);

#endif
