// Exports the function e2e_import calls (build with -library-compilation).
int exported_twice(int x)
{
    return 2 * x;
}

kernel void export_holder(global int *out)
{
    out[get_global_id(0)] = exported_twice(1);
}
