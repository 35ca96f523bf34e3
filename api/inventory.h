#ifndef API_INVENTORY_H
#define API_INVENTORY_H

/*
 * The host inventory file (trainctld --inventory):
 *   {"hosts": [{"name": "node1", "address": "10.0.0.11", "port": 22,
 *     "user": "root", "identity_file": "/path/key",
 *     "known_hosts": "/path/known_hosts", "instance_type": "ml.c5.xlarge",
 *     "cpus": 2, "gpus": 0, "accept_new_host_key": false,
 *     "agent_path": "/tmp/trainagent", "work_dir": "/var/lib/trainagent",
 *     "rack": "rack-a"}]}
 * "agent": "external" names a host whose agent someone else starts
 * (systemd, an image's boot script) with the token the controller keeps in
 * <state-dir>/hosts/<name>/token: it needs no address or SSH members and is
 * never provisioned. The default is "ssh". "rack" names the host's
 * topology domain (a rack, a switch): the scheduler keeps a job in one
 * when it can (docs/queues.md).
 * More members may come; unknown ones are ignored.
 */
#include <stddef.h>

#include "common/buf.h"

struct api_inventory_host {
	char *name;
	char *address;
	int port;	     /* default 22 */
	char *user;	     /* default "root" */
	char *identity_file; /* private key; the public one is <file>.pub */
	char *known_hosts;
	char *instance_type; /* default "ml.m5.large" */
	int cpus;	     /* 0 = as the agent reports */
	int gpus;
	int accept_new_host_key;
	char *agent_path; /* where the agent binary goes on the host */
	char *work_dir;	  /* the agent's work directory on the host */
	int external;	  /* "agent": "external": not provisioned over SSH */
	char *rack;	  /* topology domain; NULL: none */
};

struct api_inventory {
	struct api_inventory_host *hosts;
	size_t n;
};

/*
 * Parses and checks an inventory (names unique and host-name-like,
 * addresses and keys present, ports 1..65535). Returns 0 or ERR_INVALID
 * with err naming the host and member.
 */
int api_inventory_parse(const char *json, size_t len, struct api_inventory *inv,
			struct buf *err);

void api_inventory_release(struct api_inventory *inv);

#endif
