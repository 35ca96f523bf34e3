#define LOG_TAG "agent"

#include <ctype.h>
#include <string.h>

#include "agent/agent.h"
#include "agent/assign.h"
#include "agent/assignment.h"
#include "agent/preamble.h"
#include "agent/proc.h"
#include "common/buf.h"
#include "common/xalloc.h"
#include "common/banned.h"

#define HIDDEN "<hidden>"

/* Name parts that mark a value not to print. */
static const char *const secret_words[] = { "SECRET", "TOKEN",	    "PASSWORD",
					    "PASSWD", "CREDENTIAL", "PRIVATE" };

int agent_preamble_secret(const char *name, size_t len)
{
	char up[256];
	size_t i;

	if (len >= sizeof(up))
		len = sizeof(up) - 1;
	for (i = 0; i < len; i++)
		up[i] = name[i] == '-' ? '_' :
					 (char)toupper((unsigned char)name[i]);
	up[len] = '\0';
	for (i = 0; i < sizeof(secret_words) / sizeof(*secret_words); i++)
		if (strstr(up, secret_words[i]))
			return 1;
	/* API_KEY, ACCESS_KEY, KEY: a key; KEYS_DIR, KEYWORD: not. */
	return !strcmp(up, "KEY") || (len > 4 && !strcmp(up + len - 4, "_KEY"));
}

/* The variables that carry every hyperparameter at once, as JSON or argv:
 * hidden whole when one hyperparameter's value is. */
static int holds_all_hps(const char *name, size_t len)
{
	static const char *const all[] = { "SM_HPS", "SM_USER_ARGS",
					   "SM_TRAINING_ENV" };
	size_t i;

	for (i = 0; i < sizeof(all) / sizeof(*all); i++)
		if (strlen(all[i]) == len && !strncmp(name, all[i], len))
			return 1;
	return 0;
}

static int hps_hidden(const struct strvec *env)
{
	size_t i;

	for (i = 0; i < env->n; i++) {
		const char *eq = strchr(env->v[i], '=');

		if (eq && !strncmp(env->v[i], "SM_HP_", 6) &&
		    agent_preamble_secret(env->v[i] + 6,
					  (size_t)(eq - env->v[i]) - 6))
			return 1;
	}
	return 0;
}

/* The variables the toolkit lists: SM_*, and PYTHONPATH. */
static void env_lines(const struct strvec *env, struct strvec *lines)
{
	int hide_all = hps_hidden(env);
	size_t i;

	for (i = 0; i < env->n; i++) {
		const char *v = env->v[i], *eq = strchr(v, '=');
		size_t len = eq ? (size_t)(eq - v) : 0;

		if (!eq ||
		    (strncmp(v, "SM_", 3) && strncmp(v, "PYTHONPATH=", 11)))
			continue;
		if (agent_preamble_secret(v, len) ||
		    (hide_all && holds_all_hps(v, len)))
			strvec_pushf(lines, "%.*s=" HIDDEN, (int)len, v);
		else
			strvec_push(lines, v);
	}
}

/* The command, each word after a secret --name (or in --name=value)
 * hidden. */
static void command_line(const struct strvec *args, struct strvec *lines)
{
	struct buf b = BUF_INIT;
	int hide_next = 0;
	size_t i;

	for (i = 0; i < args->n; i++) {
		const char *w = args->v[i];
		const char *name = w + strspn(w, "-");
		const char *eq = strchr(name, '=');

		if (i)
			(void)buf_adds(&b, " ");
		if (hide_next) {
			(void)buf_adds(&b, HIDDEN);
			hide_next = 0;
			continue;
		}
		if (w[0] == '-' && eq &&
		    agent_preamble_secret(name, (size_t)(eq - name))) {
			(void)buf_addf(&b, "%.*s" HIDDEN, (int)(eq + 1 - w), w);
			continue;
		}
		if (w[0] == '-' && !eq)
			hide_next = agent_preamble_secret(name, strlen(name));
		(void)buf_adds(&b, w);
	}
	strvec_push(lines, b.data);
	buf_release(&b);
}

void agent_preamble_build(const char *algo, int attempt, const char *machine,
			  const struct strvec *env, const struct strvec *args,
			  struct strvec *lines)
{
	const char *hosts = agent_env_get(env, "SM_HOSTS");

	strvec_pushf(lines,
		     "Training Env: current host %s of hosts %s, attempt %d, "
		     "on machine %s",
		     algo, hosts ? hosts : "[]", attempt,
		     machine ? machine : "?");
	strvec_push(lines, "Environment variables:");
	env_lines(env, lines);
	strvec_push(lines, "Invoking script with the following command:");
	command_line(args, lines);
}

void agent_preamble_log(struct agent_ctx *ctx, const struct agent_assign *a,
			const struct strvec *env, const struct strvec *args)
{
	struct strvec lines = STRVEC_INIT;
	size_t i;

	agent_preamble_build(a->algo, a->attempt, ctx->cfg.host, env, args,
			     &lines);
	for (i = 0; i < lines.n; i++)
		agent_assign_log(ctx, a, 0, 0, lines.v[i], strlen(lines.v[i]));
	strvec_release(&lines);
}
