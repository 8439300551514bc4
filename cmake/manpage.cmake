# manpage.cmake - write blockflow.1, the manual page, from the program's own help, so that
# the page and `blockflow --help` cannot disagree. Run as
#   cmake -DBLOCKFLOW=path/to/blockflow -DVERSION=0.1.0 -DOUT=blockflow.1 -P manpage.cmake
# The help texts go in as preformatted blocks; troff's escape character and lines that would
# read as requests are escaped, and '-' becomes '\-' so that options copy as ASCII hyphens.

function(help_of out_var)
  execute_process(COMMAND ${BLOCKFLOW} ${ARGN} OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "blockflow ${ARGN} exited with ${rc}")
  endif()
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

help_of(main --help)
help_of(serve serve --help)

file(WRITE ${OUT}.tmp ".TH BLOCKFLOW 1 \"\" \"blockflow ${VERSION}\" \"User Commands\"
.SH NAME
blockflow \\- run pages of connected TensorFlow convolution blocks, from the command line or
in the browser editor
.SH SYNOPSIS
.B blockflow
.I COMMAND
.RI [ ARGS ]
.SH DESCRIPTION
A page is a JSON file of connected blocks (Conv2D and its gradients, the depthwise family,
constants and a few generic blocks) whose semantics are TensorFlow's raw ops.
.B blockflow run
checks a page, infers every shape, runs each block on the CPU or a CUDA GPU and writes the
fetched tensors as .npy files;
.B blockflow serve
serves the browser editor on the same runtime.
The text below is the program's own help
.RB ( \"blockflow --help\" ,
.BR \"blockflow serve --help\" );
.B blockflow help
.I COMMAND
prints one command's in full.
.SH COMMANDS, LIMITS AND EXIT STATUS
.nf
${main}.fi
.SH SERVE
.nf
${serve}.fi
.SH EXAMPLES
.nf
blockflow run examples/filter_grad_same.json \\-\\-print \\-\\-out out
blockflow check page.json \\-\\-json
blockflow explain examples/teach/stride2_odd_input.json dw 1 0 0 0
blockflow serve \\-\\-pages examples
.fi
.SH SEE ALSO
README.md of the source tree: the page format, the C API (blockflow.h), the Python module,
the server's HTTP and WebSocket API, and the benchmarks.
")
file(RENAME ${OUT}.tmp ${OUT})
