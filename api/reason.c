/* FailureReason categories (api/reason.h). */
#include <string.h>

#include "api/reason.h"

int api_reason_is_internal(const char *reason)
{
	return reason && !strncmp(reason, API_REASON_INTERNAL,
				  sizeof(API_REASON_INTERNAL) - 1);
}
