#ifndef PARAM_SERVER_PS_H
#define PARAM_SERVER_PS_H

/*
 * What the parameter server's files share: the wire protocol and
 * TF_CONFIG (proto.c), the server (server.c) and the workers (worker.c);
 * main.c picks the role. See main.c for how the training works.
 */
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "../mlp/mlp.h"

#define PS_MAGIC 0x31535054u /* "TPS1" */
#define PS_VERSION 1
#define HEADER_LEN 32
#define HELLO_LEN 32
#define START_LEN 16
#define ERROR_TEXT_MAX 512
#define MAX_WORKERS 256
#define MAX_SERVERS 64
#define ADDR_MAX 256
#define TF_CONFIG_MAX (1 << 20)
#define STATE_MAGIC "TCPSST01"
#define STATE_LEN (8 + 8 * 5)

enum msg_type {
	MSG_HELLO = 1,	/* worker -> server: who I am, what I train */
	MSG_INFO = 2,	/* server -> chief: newest checkpoint step */
	MSG_START = 3,	/* chief -> server: start (resume) at this step */
	MSG_READY = 4,	/* server -> worker: started at this step */
	MSG_PULL = 5,	/* worker -> server: weights of step s, please */
	MSG_PARAMS = 6, /* server -> worker: the shard at step s */
	MSG_PUSH = 7,	/* worker -> server: gradient slice of step s */
	MSG_DONE = 8,	/* worker -> server: no more steps from me */
	MSG_ERROR = 9	/* server -> worker: why it gives up (text) */
};

struct header {
	uint32_t type;
	uint64_t step;
	double aux; /* PUSH: loss share; PARAMS: last step's batch loss */
	uint32_t worker;
	uint32_t len;
};

/* The cluster as TF_CONFIG describes it, and this process's place in it. */
struct cluster {
	char workers[MAX_WORKERS][ADDR_MAX]; /* master first */
	int nworkers;
	char servers[MAX_SERVERS][ADDR_MAX];
	int nservers;
	int is_server;
	int index; /* worker number (chief = 0) or server number */
};

struct common {
	struct trainer *t;
	struct hparams hp;
	struct mlp net; /* layer sizes always; weights on workers */
	struct cluster cl;
	int timeout_s, connect_timeout_s;
	char err[MLP_ERRLEN];
};

int ps_fail(struct common *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * {"cluster": {"master": [a], "worker": [b, ...], "ps": [c, ...]},
 *  "task": {"type": "master"|"worker"|"ps", "index": i}}.
 * "chief" is accepted for "master" (newer TensorFlow); without either,
 * worker 0 is the chief, as in TensorFlow.
 */
int ps_parse_tf_config(struct common *c);

/* "host:port" or "[v6]:port" into host and port strings. */
int ps_split_addr(struct common *c, const char *addr, char *host, char *port);

void ps_set_timeouts(int fd, int seconds);

/* 0 when all of it came, 1 on a clean end of stream first, -1 else. */
int ps_read_all(int fd, void *buf, size_t len);

int ps_send_msg(int fd, uint32_t type, uint64_t step, double aux,
		uint32_t worker, const void *payload, size_t len);

/* Reads a header: 0, 1 at end of stream, -1 on error or bad magic. */
int ps_recv_header(int fd, struct header *h);

/*
 * Floats travel as their bit patterns in host order; main() refuses to
 * run on a big-endian host, so that is little-endian as the header says.
 */
int ps_send_floats_msg(int fd, uint32_t type, uint64_t step, double aux,
		       uint32_t worker, const float *v, size_t n);

void ps_drain_text(int fd, uint32_t len, char *text, size_t cap);

void ps_shard_range(size_t nparams, int nservers, int s, size_t *off,
		    size_t *len);

int ps_server_run(struct common *c);

int ps_worker_run(struct common *c, const char *arg_data);

#endif
