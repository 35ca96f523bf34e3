#ifndef AGENT_PREAMBLE_H
#define AGENT_PREAMBLE_H

/*
 * The lines a host's log opens with in script mode, as the SageMaker
 * training toolkit prints them before it runs the user's script, so that
 * a script that prints nothing still leaves a log that says what ran
 * where: the current host among the hosts, the SM_* environment, the
 * command. Values whose names look secret (with SECRET, TOKEN,
 * PASSWORD, CREDENTIAL, PRIVATE, or ending in KEY) are hidden, in the
 * environment and in the command's --name value pairs alike; so are the
 * variables holding every hyperparameter (SM_HPS, SM_USER_ARGS,
 * SM_TRAINING_ENV) when one of them is.
 */
#include "common/strvec.h"

struct agent_ctx;
struct agent_assign;

/*
 * Appends the preamble's lines to lines: algo of attempt on machine (the
 * agent's host name), env the ranks' environment, args their command.
 */
void agent_preamble_build(const char *algo, int attempt, const char *machine,
			  const struct strvec *env, const struct strvec *args,
			  struct strvec *lines);

/* Whether the value of variable or option name is to be hidden. */
int agent_preamble_secret(const char *name, size_t len);

/* Writes the preamble of assignment a to its log (rank 0, stdout). */
void agent_preamble_log(struct agent_ctx *ctx, const struct agent_assign *a,
			const struct strvec *env, const struct strvec *args);

#endif
