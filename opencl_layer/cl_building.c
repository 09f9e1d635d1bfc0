/* Programs the layer is building now. A second build of one of them answers
 * as the driver would, since a hit never reaches the driver: Intel's answers
 * CL_INVALID_OPERATION (OpenCL's answer for a build whose previous build has
 * not completed), PoCL's waits for the first. This also keeps one hit record
 * per program: only the thread that holds a program's build adds it. */
#include <pthread.h>
#include <stdlib.h>

#include "cl_layer_internal.h"
#include "zecache/fork_guard.h"

typedef struct building_program {
    cl_program program; /* first, as zcc_program_list wants */
} building_program;

static struct {
    pthread_mutex_t lock;
    zcc_program_list programs; /* of building_program */
    pthread_cond_t left;       /* signalled whenever a build ends */
    atomic_bool guarded;       /* held across fork() (fork_guard.h) */
} building = {.lock = PTHREAD_MUTEX_INITIALIZER, .left = PTHREAD_COND_INITIALIZER};

cl_int zcc_building_enter(cl_program program, bool wait)
{
    zc_fork_guard_lock(&building.lock, &building.guarded);
    /* The holder leaves once the driver's compile ends: the application's
     * callback runs after it left. */
    while (wait && zcc_program_list_find(&building.programs, program) != NULL)
        pthread_cond_wait(&building.left, &building.lock);
    cl_int result = CL_INVALID_OPERATION;
    if (zcc_program_list_find(&building.programs, program) == NULL) {
        building_program *record = malloc(sizeof(*record));
        result = CL_OUT_OF_HOST_MEMORY;
        if (record != NULL) {
            record->program = program;
            result = zcc_program_list_add(&building.programs, record) ? CL_SUCCESS
                                                                      : CL_OUT_OF_HOST_MEMORY;
        }
        if (result != CL_SUCCESS)
            free(record);
    }
    pthread_mutex_unlock(&building.lock);
    return result;
}

void zcc_building_leave(cl_program program)
{
    zc_fork_guard_lock(&building.lock, &building.guarded);
    free(zcc_program_list_take(&building.programs, program));
    pthread_cond_broadcast(&building.left);
    pthread_mutex_unlock(&building.lock);
}
