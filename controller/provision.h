#ifndef CTRL_PROVISION_H
#define CTRL_PROVISION_H

/*
 * SSH provisioning (libssh2): for each inventory host without a live
 * agent, connect, check the host key against the inventory's known_hosts
 * file, authenticate with the key, copy trainagent when it is missing or a
 * different build (by SHA-256), and start it detached with its token sent
 * over the encrypted channel. Hosts are provisioned in parallel, each by a
 * short-lived worker thread; failures are retried with backoff and shown
 * in GET /v1/hosts.
 */
#include "common/buf.h"

struct ctrl_ctx;

/* Loads --inventory and adds its hosts. Returns 0 or an error with err. */
int ctrl_inventory_load(struct ctrl_ctx *ctx, struct buf *err);

/* Starts provisioning where it is due; called by the reconciler. */
void ctrl_provision_tick(struct ctrl_ctx *ctx);

/* Waits for running provisioning workers (shutdown). */
void ctrl_provision_stop(struct ctrl_ctx *ctx);

#endif
