# cmake -DINPUT=file -DOUTPUT=file.cpp -P embed_text.cmake: the file's text as
# kbench::integrity::kBuiltinGpuTable.
file(READ ${INPUT} text)
string(FIND "${text}" ")kbench\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "${INPUT} holds the raw string's closing delimiter")
endif()
file(WRITE ${OUTPUT}.tmp "namespace kbench::integrity {\nextern const char* const kBuiltinGpuTable;\nconst char* const kBuiltinGpuTable = R\"kbench(${text})kbench\";\n}\n")
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${OUTPUT}.tmp ${OUTPUT})
