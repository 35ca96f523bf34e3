#include <string.h>

#include "controller/request.h"
#include "controller/route.h"
#include "common/banned.h"

static int add(struct ctrl_route_params *p, const char *s, size_t len)
{
	if (!p)
		return 1;
	if (p->n == CTRL_ROUTE_MAX_PARAMS)
		return 0;
	p->s[p->n] = s;
	p->len[p->n++] = len;
	return 1;
}

int ctrl_route_match(const char *pattern, const char *path,
		     struct ctrl_route_params *p)
{
	if (p)
		p->n = 0;
	while (*pattern) {
		if (!strcmp(pattern, "*"))
			return add(p, path, strlen(path));
		if (!strncmp(pattern, "{}", 2)) {
			size_t len = strcspn(path, "/");

			if (!len || !add(p, path, len))
				return 0;
			path += len;
			pattern += 2;
			continue;
		}
		if (*pattern != *path)
			return 0;
		pattern++;
		path++;
	}
	return *path == '\0';
}

enum ctrl_route_result ctrl_route_refuse(struct ctrl_ctx *ctx,
					 struct MHD_Connection *conn,
					 const char *method, const char *url,
					 struct ctrl_http_req *req,
					 struct ctrl_response *resp,
					 const char **content_type)
{
	const struct ctrl_refusal *r = req->route->arg;

	(void)ctx;
	(void)conn;
	(void)method;
	(void)url;
	if (r->content_type)
		*content_type = r->content_type;
	ctrl_reply_err(resp, r->code, r->msg);
	return CTRL_ROUTE_DONE;
}
