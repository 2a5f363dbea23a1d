"""The rewrite rules, one module per op family; importing this package registers them all."""

from . import (  # noqa: F401
    bitcast,
    bitwise,
    col2im,
    cumprod,
    deformconv,
    dft,
    einsum,
    function_bodies,
    gathernd,
    gridsample,
    isinf,
    isnan,
    melweightmatrix,
    optional,
    range,
    recurrent,
    resize,
    tensorscatter,
    trilu,
    versions,
)
