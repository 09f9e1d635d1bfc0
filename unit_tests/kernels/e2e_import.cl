// Calls a function another module exports: created with unresolved imports,
// runnable only after zeModuleDynamicLink with e2e_export.
int exported_twice(int x);

kernel void call_import(global int *out)
{
    out[get_global_id(0)] = exported_twice((int)get_global_id(0));
}
