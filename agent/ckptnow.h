#ifndef AGENT_CKPTNOW_H
#define AGENT_CKPTNOW_H

/*
 * The checkpoint-now request (docs/checkpoints.md, "Checkpoint now"):
 * before a planned stop the agent asks the ranks to checkpoint at their
 * next step, through a file in the job's scratch folder that every rank
 * is told of (agent/ckptnow.c).
 */
#include "common/strvec.h"

/* The variable that names the request file in every rank. */
#define AGENT_CKPTNOW_ENV "TRAINCTL_CHECKPOINT_NOW"

/* Sets AGENT_CKPTNOW_ENV for ranks that see the job folder as base. */
void agent_ckptnow_env(const char *base, struct strvec *env);
/* Before an attempt's ranks start: no request, no listener. */
void agent_ckptnow_reset(const char *dir);
/* 1 when a rank said it takes requests (created "<file>.listening"). */
int agent_ckptnow_listening(const char *dir);
/*
 * Asks for a checkpoint: creates the request file with why in it. Returns
 * 0, or -1 when it cannot be made (logged; the stop goes on without).
 */
int agent_ckptnow_request(const char *dir, const char *why);
/* 1 while the request file is there (the program removes it when its
 * checkpoint is complete). */
int agent_ckptnow_pending(const char *dir);

#endif
