#ifndef COMMON_ERR_H
#define COMMON_ERR_H

/*
 * Error codes shared by every module. Functions return 0 on success and one
 * of these (always negative) on failure; err_str() gives the text.
 */
enum err_code {
	ERR_OK = 0,
	ERR_NOMEM = -1,	   /* allocation failed */
	ERR_INVALID = -2,  /* bad input from a caller or the network */
	ERR_NOTFOUND = -3, /* no such object */
	ERR_CONFLICT = -4, /* object exists or is in the wrong state */
	ERR_IO = -5,	   /* a file or socket operation failed */
	ERR_DB = -6,	   /* the store failed */
	ERR_TOOBIG = -7,   /* a size limit was hit */
	ERR_AUTH = -8,	   /* authentication failed */
	ERR_LIMIT = -9,	   /* a quota or capacity limit */
	ERR_INTERNAL = -10 /* should not happen */
};

/* Returns a static, lower-case description of code; never NULL. */
const char *err_str(int code);

#endif
