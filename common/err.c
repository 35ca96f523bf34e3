#include "common/err.h"

const char *err_str(int code)
{
	switch (code) {
	case ERR_OK:
		return "success";
	case ERR_NOMEM:
		return "out of memory";
	case ERR_INVALID:
		return "invalid argument";
	case ERR_NOTFOUND:
		return "not found";
	case ERR_CONFLICT:
		return "conflict";
	case ERR_IO:
		return "input/output error";
	case ERR_DB:
		return "database error";
	case ERR_TOOBIG:
		return "size limit exceeded";
	case ERR_AUTH:
		return "authentication failed";
	case ERR_LIMIT:
		return "limit exceeded";
	case ERR_INTERNAL:
		return "internal error";
	}
	return "unknown error";
}
