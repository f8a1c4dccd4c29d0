# Fails the build when the worker module carries its own copy of libstdc++ (see CMakeLists.txt).
execute_process(COMMAND ${NM} -D --defined-only ${MODULE} OUTPUT_VARIABLE symbols)
if(symbols MATCHES "_ZNSo9_M_insertI")
  message(FATAL_ERROR
    "${MODULE} defines libstdc++'s own functions: the compiler linked libstdc++ statically, "
    "and the module would crash beside libtorch. Build with a compiler that links the shared "
    "libstdc++ (for example CXX=/usr/bin/g++).")
endif()
