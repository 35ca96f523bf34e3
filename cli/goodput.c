/*
 * trainctl describe-training-job's goodput lines (docs/goodput.md).
 */
#include <inttypes.h>
#include <stdio.h>

#include "api/goodput.h"
#include "cli/cli.h"
#include "common/err.h"
#include "common/banned.h"

void cli_goodput_print(const char *json, size_t len)
{
	struct api_goodput g;
	struct buf err = BUF_INIT;
	size_t i;

	if (api_goodput_parse(json, len, &g, &err)) {
		buf_release(&err);
		return; /* an older controller, or none to show */
	}
	printf("%-17s%.2f of %.1f s", "Goodput:", g.ratio, g.wall_s);
	if (g.step >= 0)
		printf(" (step %" PRId64 ", %" PRId64 " steps redone)", g.step,
		       g.steps_redone);
	else
		printf(" (no step reported)");
	printf("\n");
	for (i = 0; i < g.n; i++)
		printf("  %-24s %10.1f s %5.1f%%\n", g.names[i], g.seconds[i],
		       g.wall_s > 0 ? 100.0 * g.seconds[i] / g.wall_s : 0.0);
	api_goodput_release(&g);
	buf_release(&err);
}
