# Compiles text files into kbench as C++ strings, in one of two forms:
#   cmake -DINPUT=file -DOUTPUT=file.cpp -P embed_text.cmake
#     the file's text as kbench::integrity::kBuiltinGpuTable;
#   cmake -DBASE=dir -DFILES=a.md,b/c.py -DNAMESPACE=ns -DTABLE=kName -DOUTPUT=file.cpp -P embed_text.cmake
#     each file under BASE as a named string (its path without the extension: "a", "b/c"), in
#     ns::kName (a null-terminated array of kbench::EmbeddedText, core/embedded_text.hpp).
function(check_delimiter path text)
  string(FIND "${text}" ")kbench\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${path} holds the raw string's closing delimiter")
  endif()
endfunction()

function(write_if_different output content)
  file(WRITE ${output}.tmp "${content}")
  execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different ${output}.tmp ${output})
endfunction()

if(DEFINED FILES)
  string(REPLACE "," ";" files "${FILES}")
  set(entries "")
  foreach(relative IN LISTS files)
    file(READ ${BASE}/${relative} text)
    check_delimiter(${BASE}/${relative} "${text}")
    string(REGEX REPLACE "\\.[^./]*$" "" name "${relative}")
    string(APPEND entries "    {\"${name}\", R\"kbench(${text})kbench\"},\n")
  endforeach()
  write_if_different(${OUTPUT} "#include \"core/embedded_text.hpp\"\n\
namespace ${NAMESPACE} {\n\
extern const kbench::EmbeddedText ${TABLE}[];\n\
const kbench::EmbeddedText ${TABLE}[] = {\n${entries}    {nullptr, nullptr}};\n}\n")
else()
  file(READ ${INPUT} text)
  check_delimiter(${INPUT} "${text}")
  write_if_different(${OUTPUT} "namespace kbench::integrity {\nextern const char* const kBuiltinGpuTable;\nconst char* const kBuiltinGpuTable = R\"kbench(${text})kbench\";\n}\n")
endif()
