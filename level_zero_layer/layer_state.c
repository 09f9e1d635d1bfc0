/* The layer's one piece of global state: set up by the constructor
 * (layer_init.c) and by the loader's table calls (layer_hooks.c), read by
 * every call afterwards. */
#include "layer_internal.h"

zcl_state zcl_layer;
