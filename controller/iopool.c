/* Worker threads for steps that wait on the disk (controller/iopool.h). */
#define LOG_TAG "iopool"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "controller/iopool.h"
#include "common/err.h"
#include "common/xalloc.h"
#include "common/banned.h"

struct iojob {
	struct MHD_Connection *conn;
	ctrl_iopool_fn *fn;
	void *arg;
	struct iojob *next;
};

struct ctrl_iopool {
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct iojob *head, *tail;
	int stopping;
	pthread_t *threads;
	int n;
};

static void *worker(void *arg)
{
	struct ctrl_iopool *p = arg;

	for (;;) {
		struct iojob *j;

		pthread_mutex_lock(&p->lock);
		while (!p->head && !p->stopping)
			pthread_cond_wait(&p->more, &p->lock);
		j = p->head;
		if (j) {
			p->head = j->next;
			if (!p->head)
				p->tail = NULL;
		}
		pthread_mutex_unlock(&p->lock);
		if (!j)
			return NULL; /* stopping and drained */
		j->fn(j->arg);
		if (j->conn)
			MHD_resume_connection(j->conn);
		free(j);
	}
}

int ctrl_iopool_start(struct ctrl_iopool **pool, int workers, struct buf *err)
{
	struct ctrl_iopool *p = xcalloc(1, sizeof(*p));
	int i;

	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->more, NULL);
	p->threads = xcalloc((size_t)workers, sizeof(*p->threads));
	for (i = 0; i < workers; i++) {
		if (pthread_create(&p->threads[i], NULL, worker, p)) {
			(void)buf_addf(err, "cannot start I/O worker %d", i);
			p->n = i;
			ctrl_iopool_stop(p);
			return ERR_INTERNAL;
		}
	}
	p->n = workers;
	*pool = p;
	return 0;
}

int ctrl_iopool_run(struct ctrl_iopool *p, struct MHD_Connection *conn,
		    ctrl_iopool_fn *fn, void *arg)
{
	struct iojob *j;

	if (!p)
		return -1;
	j = xcalloc(1, sizeof(*j));
	j->conn = conn;
	j->fn = fn;
	j->arg = arg;
	pthread_mutex_lock(&p->lock);
	if (p->stopping) {
		pthread_mutex_unlock(&p->lock);
		free(j);
		return -1;
	}
	/* Suspended before a worker can resume it. */
	if (conn)
		MHD_suspend_connection(conn);
	if (p->tail)
		p->tail->next = j;
	else
		p->head = j;
	p->tail = j;
	pthread_cond_signal(&p->more);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void ctrl_iopool_stop(struct ctrl_iopool *p)
{
	int i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stopping = 1;
	pthread_cond_broadcast(&p->more);
	pthread_mutex_unlock(&p->lock);
	for (i = 0; i < p->n; i++)
		pthread_join(p->threads[i], NULL);
	pthread_mutex_destroy(&p->lock);
	pthread_cond_destroy(&p->more);
	free(p->threads);
	free(p);
}
