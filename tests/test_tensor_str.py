"""Tensor printing follows PyTorch's (torch/_tensor_str.py rules, PyTorch 2.13).

Every expected string below is what PyTorch 2.13 prints for the same tensor built with
``torch`` in place of ``tgrad`` (its dtype names read ``torch.float16`` where tgrad's read
``tgrad.float16``): precision 4, one common width per tensor, int / fixed / scientific
mode chosen from the nonzero finite values, summarization above 1000 elements with 3 edge
items, wrapping at 80 characters, and the device/size/dtype/grad suffixes.
"""

import math

import numpy as np
import pytest

import tgrad
from tgrad import nn
from tgrad.tensor import Tensor

nan, inf = math.nan, math.inf
NAMES = {"tgrad": tgrad, "nn": nn, "nan": nan, "inf": inf}


@pytest.fixture
def default_options():
    """Restore the print options (and default dtype) a test changes."""
    dtype = tgrad.get_default_dtype()
    yield
    tgrad.set_printoptions(profile="default")
    tgrad.set_default_dtype(dtype)


# (expression, PyTorch 2.13's repr of the same tensor)
CASES = [
    ('tgrad.tensor([1.5, 2., 3.14159])',
     'tensor([1.5000, 2.0000, 3.1416])'),
    ('tgrad.tensor([1e-8, 1.])',
     'tensor([1.0000e-08, 1.0000e+00])'),
    ('tgrad.tensor([1e6])',
     'tensor([1000000.])'),
    ('tgrad.tensor([1e8, 1.])',
     'tensor([1.0000e+08, 1.0000e+00])'),
    ('tgrad.tensor([1e9])',
     'tensor([1.0000e+09])'),
    ('tgrad.tensor([123456789.0, 2.5])',
     'tensor([1.2346e+08, 2.5000e+00])'),
    ('tgrad.arange(2000.)',
     ('tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n'
      '        1.9990e+03])')),
    ('tgrad.arange(10000.).reshape(100, 100)',
     ('tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.7000e+01, 9.8000e+01,\n'
      '         9.9000e+01],\n'
      '        [1.0000e+02, 1.0100e+02, 1.0200e+02,  ..., 1.9700e+02, 1.9800e+02,\n'
      '         1.9900e+02],\n'
      '        [2.0000e+02, 2.0100e+02, 2.0200e+02,  ..., 2.9700e+02, 2.9800e+02,\n'
      '         2.9900e+02],\n'
      '        ...,\n'
      '        [9.7000e+03, 9.7010e+03, 9.7020e+03,  ..., 9.7970e+03, 9.7980e+03,\n'
      '         9.7990e+03],\n'
      '        [9.8000e+03, 9.8010e+03, 9.8020e+03,  ..., 9.8970e+03, 9.8980e+03,\n'
      '         9.8990e+03],\n'
      '        [9.9000e+03, 9.9010e+03, 9.9020e+03,  ..., 9.9970e+03, 9.9980e+03,\n'
      '         9.9990e+03]])')),
    ('tgrad.arange(10000.).reshape(100, 100) / 7',
     ('tensor([[0.0000e+00, 1.4286e-01, 2.8571e-01,  ..., 1.3857e+01, 1.4000e+01,\n'
      '         1.4143e+01],\n'
      '        [1.4286e+01, 1.4429e+01, 1.4571e+01,  ..., 2.8143e+01, 2.8286e+01,\n'
      '         2.8429e+01],\n'
      '        [2.8571e+01, 2.8714e+01, 2.8857e+01,  ..., 4.2429e+01, 4.2571e+01,\n'
      '         4.2714e+01],\n'
      '        ...,\n'
      '        [1.3857e+03, 1.3859e+03, 1.3860e+03,  ..., 1.3996e+03, 1.3997e+03,\n'
      '         1.3999e+03],\n'
      '        [1.4000e+03, 1.4001e+03, 1.4003e+03,  ..., 1.4139e+03, 1.4140e+03,\n'
      '         1.4141e+03],\n'
      '        [1.4143e+03, 1.4144e+03, 1.4146e+03,  ..., 1.4281e+03, 1.4283e+03,\n'
      '         1.4284e+03]])')),
    ('tgrad.arange(24.).reshape(2, 3, 4)',
     ('tensor([[[ 0.,  1.,  2.,  3.],\n'
      '         [ 4.,  5.,  6.,  7.],\n'
      '         [ 8.,  9., 10., 11.]],\n'
      '\n'
      '        [[12., 13., 14., 15.],\n'
      '         [16., 17., 18., 19.],\n'
      '         [20., 21., 22., 23.]]])')),
    ('tgrad.arange(24.).reshape(2, 3, 4) / 3',
     ('tensor([[[0.0000, 0.3333, 0.6667, 1.0000],\n'
      '         [1.3333, 1.6667, 2.0000, 2.3333],\n'
      '         [2.6667, 3.0000, 3.3333, 3.6667]],\n'
      '\n'
      '        [[4.0000, 4.3333, 4.6667, 5.0000],\n'
      '         [5.3333, 5.6667, 6.0000, 6.3333],\n'
      '         [6.6667, 7.0000, 7.3333, 7.6667]]])')),
    ('tgrad.ones(2, 1, 2, 2)',
     ('tensor([[[[1., 1.],\n'
      '          [1., 1.]]],\n'
      '\n'
      '\n'
      '        [[[1., 1.],\n'
      '          [1., 1.]]]])')),
    ('tgrad.zeros(10, 10, 20)',
     ('tensor([[[0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         ...,\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.]],\n'
      '\n'
      '        [[0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         ...,\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.]],\n'
      '\n'
      '        [[0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         ...,\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.]],\n'
      '\n'
      '        ...,\n'
      '\n'
      '        [[0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         ...,\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.]],\n'
      '\n'
      '        [[0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         ...,\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.]],\n'
      '\n'
      '        [[0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         ...,\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.],\n'
      '         [0., 0., 0.,  ..., 0., 0., 0.]]])')),
    ('tgrad.arange(2000.).reshape(2, 1000)',
     ('tensor([[0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 9.9700e+02, 9.9800e+02,\n'
      '         9.9900e+02],\n'
      '        [1.0000e+03, 1.0010e+03, 1.0020e+03,  ..., 1.9970e+03, 1.9980e+03,\n'
      '         1.9990e+03]])')),
    ('tgrad.tensor([1., 1000., 1e-3])',
     'tensor([1.0000e+00, 1.0000e+03, 1.0000e-03])'),
    ('tgrad.tensor([1., 100., 1000.5])',
     'tensor([1.0000e+00, 1.0000e+02, 1.0005e+03])'),
    ('tgrad.tensor([0.001, 0.5])',
     'tensor([0.0010, 0.5000])'),
    ('tgrad.tensor([1e-4, 1.])',
     'tensor([1.0000e-04, 1.0000e+00])'),
    ('tgrad.tensor([123.456, 0.5, -7.25])',
     'tensor([123.4560,   0.5000,  -7.2500])'),
    ('tgrad.tensor([[1., -2.5], [3.25, 4.]])',
     ('tensor([[ 1.0000, -2.5000],\n'
      '        [ 3.2500,  4.0000]])')),
    ('tgrad.tensor([nan, inf, -inf, 1.5])',
     'tensor([   nan,    inf,   -inf, 1.5000])'),
    ('tgrad.tensor([nan, 1., -2.])',
     'tensor([nan,  1., -2.])'),
    ('tgrad.tensor([nan, inf])',
     'tensor([nan, inf])'),
    ('tgrad.tensor([nan, 1e-6, 1.])',
     'tensor([       nan, 1.0000e-06, 1.0000e+00])'),
    ('tgrad.tensor([0., -0., 1.])',
     'tensor([0., -0., 1.])'),
    ('tgrad.tensor([-0.0, 0.5])',
     'tensor([-0.0000, 0.5000])'),
    ('tgrad.tensor([0., 0.])',
     'tensor([0., 0.])'),
    ('tgrad.tensor([0.99999, 2.])',
     'tensor([1.0000, 2.0000])'),
    ('tgrad.tensor([-1e-5])',
     'tensor([-1.0000e-05])'),
    ('tgrad.arange(30.) / 7',
     ('tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n'
      '        1.2857, 1.4286, 1.5714, 1.7143, 1.8571, 2.0000, 2.1429, 2.2857, 2.4286,\n'
      '        2.5714, 2.7143, 2.8571, 3.0000, 3.1429, 3.2857, 3.4286, 3.5714, 3.7143,\n'
      '        3.8571, 4.0000, 4.1429])')),
    ('tgrad.linspace(-3, 3, 1200)',
     'tensor([-3.0000, -2.9950, -2.9900,  ...,  2.9900,  2.9950,  3.0000])'),
    ('tgrad.tensor([1, -20, 300])',
     'tensor([  1, -20, 300])'),
    ('tgrad.arange(2000)',
     'tensor([   0,    1,    2,  ..., 1997, 1998, 1999])'),
    ('tgrad.arange(20).reshape(4, 5) * 1000',
     ('tensor([[    0,  1000,  2000,  3000,  4000],\n'
      '        [ 5000,  6000,  7000,  8000,  9000],\n'
      '        [10000, 11000, 12000, 13000, 14000],\n'
      '        [15000, 16000, 17000, 18000, 19000]])')),
    ('tgrad.tensor([[1, 2], [3, 4]], dtype=tgrad.int32)',
     ('tensor([[1, 2],\n'
      '        [3, 4]], dtype=tgrad.int32)')),
    ('tgrad.tensor([123456789012, 1])',
     'tensor([123456789012,            1])'),
    ('tgrad.tensor([True, False, True])',
     'tensor([ True, False,  True])'),
    ('tgrad.tensor([[True], [False]])',
     ('tensor([[ True],\n'
      '        [False]])')),
    ('tgrad.tensor([1.5, 2.25, -3.], dtype=tgrad.float16)',
     'tensor([ 1.5000,  2.2500, -3.0000], dtype=tgrad.float16)'),
    ('tgrad.tensor([1e-5, 3.], dtype=tgrad.float16)',
     'tensor([1.0014e-05, 3.0000e+00], dtype=tgrad.float16)'),
    ('tgrad.arange(2000, dtype=tgrad.float16)',
     ('tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n'
      '        1.9990e+03], dtype=tgrad.float16)')),
    ('tgrad.tensor([3.14159, 100.], dtype=tgrad.bfloat16)',
     'tensor([  3.1406, 100.0000], dtype=tgrad.bfloat16)'),
    ('tgrad.tensor([0.1, 0.2], dtype=tgrad.float64)',
     'tensor([0.1000, 0.2000], dtype=tgrad.float64)'),
    ('tgrad.tensor(3.5)',
     'tensor(3.5000)'),
    ('tgrad.tensor(0.)',
     'tensor(0.)'),
    ('tgrad.tensor(-0.)',
     'tensor(-0.)'),
    ('tgrad.tensor(1e-5)',
     'tensor(1.0000e-05)'),
    ('tgrad.tensor(1e10)',
     'tensor(1.0000e+10)'),
    ('tgrad.tensor(nan)',
     'tensor(nan)'),
    ('tgrad.tensor(-inf)',
     'tensor(-inf)'),
    ('tgrad.tensor(7)',
     'tensor(7)'),
    ('tgrad.tensor(True)',
     'tensor(True)'),
    ('tgrad.tensor(2.5, dtype=tgrad.float16)',
     'tensor(2.5000, dtype=tgrad.float16)'),
    ('tgrad.zeros(0)',
     'tensor([])'),
    ('tgrad.zeros(0, 3)',
     'tensor([], size=(0, 3))'),
    ('tgrad.zeros(2, 0, 4, dtype=tgrad.int64)',
     'tensor([], size=(2, 0, 4), dtype=tgrad.int64)'),
    ('tgrad.zeros(0, dtype=tgrad.int32)',
     'tensor([], dtype=tgrad.int32)'),
    # an empty tensor implies only the default float dtype, not the default complex one
    ('tgrad.zeros(0, dtype=tgrad.complex64)',
     'tensor([], dtype=tgrad.complex64)'),
    ('tgrad.zeros(1, 0, dtype=tgrad.complex64)',
     'tensor([], size=(1, 0), dtype=tgrad.complex64)'),
    ('tgrad.tensor([1.5, 2.], requires_grad=True)',
     'tensor([1.5000, 2.0000], requires_grad=True)'),
    ('tgrad.tensor([1.5, 2.], requires_grad=True) * 2',
     'tensor([3., 4.], grad_fn=<MulBackward0>)'),
    ('(tgrad.tensor([1.5, 2.], requires_grad=True) * 2).sum()',
     'tensor(7., grad_fn=<SumBackward0>)'),
    ('tgrad.arange(20., requires_grad=True) / 3',
     ('tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
      '        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667,\n'
      '        6.0000, 6.3333], grad_fn=<DivBackward0>)')),
    ('tgrad.arange(18., requires_grad=True) / 3',
     ('tensor([0.0000, 0.3333, 0.6667, 1.0000, 1.3333, 1.6667, 2.0000, 2.3333, 2.6667,\n'
      '        3.0000, 3.3333, 3.6667, 4.0000, 4.3333, 4.6667, 5.0000, 5.3333, 5.6667],\n'
      '       grad_fn=<DivBackward0>)')),
    ('tgrad.arange(13., requires_grad=True) / 7',
     ('tensor([0.0000, 0.1429, 0.2857, 0.4286, 0.5714, 0.7143, 0.8571, 1.0000, 1.1429,\n'
      '        1.2857, 1.4286, 1.5714, 1.7143], grad_fn=<DivBackward0>)')),
    ('tgrad.arange(6., requires_grad=True).reshape(2, 3).double() / 7',
     ('tensor([[0.0000, 0.1429, 0.2857],\n'
      '        [0.4286, 0.5714, 0.7143]], dtype=tgrad.float64, grad_fn=<DivBackward0>)')),
    ('tgrad.arange(12.).reshape(3, 4).half() / 3',
     ('tensor([[0.0000, 0.3333, 0.6665, 1.0000],\n'
      '        [1.3330, 1.6670, 2.0000, 2.3340],\n'
      '        [2.6660, 3.0000, 3.3340, 3.6660]], dtype=tgrad.float16)')),
    ('nn.Parameter(tgrad.tensor([1., 2.]))',
     ('Parameter containing:\n'
      'tensor([1., 2.], requires_grad=True)')),
    ('nn.Parameter(tgrad.tensor(1.5))',
     ('Parameter containing:\n'
      'tensor(1.5000, requires_grad=True)')),
    ('tgrad.tensor([[1e-3, 2e5], [3., nan]])',
     ('tensor([[1.0000e-03, 2.0000e+05],\n'
      '        [3.0000e+00,        nan]])')),
    ('tgrad.tensor([-123456., 0.25])',
     'tensor([-1.2346e+05,  2.5000e-01])'),
]


@pytest.mark.parametrize("expr,expected", CASES, ids=[c[0] for c in CASES])
def test_repr_matches_pytorch(expr, expected):
    t = eval(expr, NAMES)
    assert repr(t) == expected
    assert str(t) == expected


# (set_printoptions arguments, expression, PyTorch 2.13's repr under those options;
# None: under set_default_dtype(float64) instead)
OPTION_CASES = [
    ({'precision': 2}, 'tgrad.tensor([1.12345, 2.])',
     'tensor([1.12, 2.00])'),
    ({'threshold': 5}, 'tgrad.arange(10)',
     'tensor([0, 1, 2,  ..., 7, 8, 9])'),
    ({'threshold': 5, 'edgeitems': 1}, 'tgrad.arange(10.).reshape(2, 5)',
     ('tensor([[0.,  ..., 4.],\n'
      '        [5.,  ..., 9.]])')),
    ({'threshold': 5, 'edgeitems': 0}, 'tgrad.arange(10.)',
     'tensor([...], size=(10,))'),
    ({'threshold': 5, 'edgeitems': 0}, 'tgrad.arange(10.).reshape(2, 5)',
     'tensor([...], size=(2, 5))'),
    ({'threshold': 5, 'edgeitems': 0}, 'tgrad.tensor(2.5)',
     'tensor(2.5000, size=())'),
    ({'sci_mode': False}, 'tgrad.tensor([1e-8, 1.])',
     'tensor([0.0000, 1.0000])'),
    ({'sci_mode': True}, 'tgrad.tensor([1.5, 2.])',
     'tensor([1.5000e+00, 2.0000e+00])'),
    ({'sci_mode': True}, 'tgrad.tensor([3, 4])',
     'tensor([3, 4])'),
    ({'sci_mode': True}, 'tgrad.tensor([2., 3.])',
     'tensor([2.0000e+00, 3.0000e+00])'),
    ({'profile': 'short'}, 'tgrad.arange(2000.).reshape(40, 50) / 3',
     ('tensor([[0.00e+00, 3.33e-01,  ..., 1.60e+01, 1.63e+01],\n'
      '        [1.67e+01, 1.70e+01,  ..., 3.27e+01, 3.30e+01],\n'
      '        ...,\n'
      '        [6.33e+02, 6.34e+02,  ..., 6.49e+02, 6.50e+02],\n'
      '        [6.50e+02, 6.50e+02,  ..., 6.66e+02, 6.66e+02]])')),
    ({'profile': 'full'}, 'tgrad.arange(1001)',
     ('tensor([   0,    1,    2,    3,    4,    5,    6,    7,    8,    9,   10,   11,\n'
      '          12,   13,   14,   15,   16,   17,   18,   19,   20,   21,   22,   23,\n'
      '          24,   25,   26,   27,   28,   29,   30,   31,   32,   33,   34,   35,\n'
      '          36,   37,   38,   39,   40,   41,   42,   43,   44,   45,   46,   47,\n'
      '          48,   49,   50,   51,   52,   53,   54,   55,   56,   57,   58,   59,\n'
      '          60,   61,   62,   63,   64,   65,   66,   67,   68,   69,   70,   71,\n'
      '          72,   73,   74,   75,   76,   77,   78,   79,   80,   81,   82,   83,\n'
      '          84,   85,   86,   87,   88,   89,   90,   91,   92,   93,   94,   95,\n'
      '          96,   97,   98,   99,  100,  101,  102,  103,  104,  105,  106,  107,\n'
      '         108,  109,  110,  111,  112,  113,  114,  115,  116,  117,  118,  119,\n'
      '         120,  121,  122,  123,  124,  125,  126,  127,  128,  129,  130,  131,\n'
      '         132,  133,  134,  135,  136,  137,  138,  139,  140,  141,  142,  143,\n'
      '         144,  145,  146,  147,  148,  149,  150,  151,  152,  153,  154,  155,\n'
      '         156,  157,  158,  159,  160,  161,  162,  163,  164,  165,  166,  167,\n'
      '         168,  169,  170,  171,  172,  173,  174,  175,  176,  177,  178,  179,\n'
      '         180,  181,  182,  183,  184,  185,  186,  187,  188,  189,  190,  191,\n'
      '         192,  193,  194,  195,  196,  197,  198,  199,  200,  201,  202,  203,\n'
      '         204,  205,  206,  207,  208,  209,  210,  211,  212,  213,  214,  215,\n'
      '         216,  217,  218,  219,  220,  221,  222,  223,  224,  225,  226,  227,\n'
      '         228,  229,  230,  231,  232,  233,  234,  235,  236,  237,  238,  239,\n'
      '         240,  241,  242,  243,  244,  245,  246,  247,  248,  249,  250,  251,\n'
      '         252,  253,  254,  255,  256,  257,  258,  259,  260,  261,  262,  263,\n'
      '         264,  265,  266,  267,  268,  269,  270,  271,  272,  273,  274,  275,\n'
      '         276,  277,  278,  279,  280,  281,  282,  283,  284,  285,  286,  287,\n'
      '         288,  289,  290,  291,  292,  293,  294,  295,  296,  297,  298,  299,\n'
      '         300,  301,  302,  303,  304,  305,  306,  307,  308,  309,  310,  311,\n'
      '         312,  313,  314,  315,  316,  317,  318,  319,  320,  321,  322,  323,\n'
      '         324,  325,  326,  327,  328,  329,  330,  331,  332,  333,  334,  335,\n'
      '         336,  337,  338,  339,  340,  341,  342,  343,  344,  345,  346,  347,\n'
      '         348,  349,  350,  351,  352,  353,  354,  355,  356,  357,  358,  359,\n'
      '         360,  361,  362,  363,  364,  365,  366,  367,  368,  369,  370,  371,\n'
      '         372,  373,  374,  375,  376,  377,  378,  379,  380,  381,  382,  383,\n'
      '         384,  385,  386,  387,  388,  389,  390,  391,  392,  393,  394,  395,\n'
      '         396,  397,  398,  399,  400,  401,  402,  403,  404,  405,  406,  407,\n'
      '         408,  409,  410,  411,  412,  413,  414,  415,  416,  417,  418,  419,\n'
      '         420,  421,  422,  423,  424,  425,  426,  427,  428,  429,  430,  431,\n'
      '         432,  433,  434,  435,  436,  437,  438,  439,  440,  441,  442,  443,\n'
      '         444,  445,  446,  447,  448,  449,  450,  451,  452,  453,  454,  455,\n'
      '         456,  457,  458,  459,  460,  461,  462,  463,  464,  465,  466,  467,\n'
      '         468,  469,  470,  471,  472,  473,  474,  475,  476,  477,  478,  479,\n'
      '         480,  481,  482,  483,  484,  485,  486,  487,  488,  489,  490,  491,\n'
      '         492,  493,  494,  495,  496,  497,  498,  499,  500,  501,  502,  503,\n'
      '         504,  505,  506,  507,  508,  509,  510,  511,  512,  513,  514,  515,\n'
      '         516,  517,  518,  519,  520,  521,  522,  523,  524,  525,  526,  527,\n'
      '         528,  529,  530,  531,  532,  533,  534,  535,  536,  537,  538,  539,\n'
      '         540,  541,  542,  543,  544,  545,  546,  547,  548,  549,  550,  551,\n'
      '         552,  553,  554,  555,  556,  557,  558,  559,  560,  561,  562,  563,\n'
      '         564,  565,  566,  567,  568,  569,  570,  571,  572,  573,  574,  575,\n'
      '         576,  577,  578,  579,  580,  581,  582,  583,  584,  585,  586,  587,\n'
      '         588,  589,  590,  591,  592,  593,  594,  595,  596,  597,  598,  599,\n'
      '         600,  601,  602,  603,  604,  605,  606,  607,  608,  609,  610,  611,\n'
      '         612,  613,  614,  615,  616,  617,  618,  619,  620,  621,  622,  623,\n'
      '         624,  625,  626,  627,  628,  629,  630,  631,  632,  633,  634,  635,\n'
      '         636,  637,  638,  639,  640,  641,  642,  643,  644,  645,  646,  647,\n'
      '         648,  649,  650,  651,  652,  653,  654,  655,  656,  657,  658,  659,\n'
      '         660,  661,  662,  663,  664,  665,  666,  667,  668,  669,  670,  671,\n'
      '         672,  673,  674,  675,  676,  677,  678,  679,  680,  681,  682,  683,\n'
      '         684,  685,  686,  687,  688,  689,  690,  691,  692,  693,  694,  695,\n'
      '         696,  697,  698,  699,  700,  701,  702,  703,  704,  705,  706,  707,\n'
      '         708,  709,  710,  711,  712,  713,  714,  715,  716,  717,  718,  719,\n'
      '         720,  721,  722,  723,  724,  725,  726,  727,  728,  729,  730,  731,\n'
      '         732,  733,  734,  735,  736,  737,  738,  739,  740,  741,  742,  743,\n'
      '         744,  745,  746,  747,  748,  749,  750,  751,  752,  753,  754,  755,\n'
      '         756,  757,  758,  759,  760,  761,  762,  763,  764,  765,  766,  767,\n'
      '         768,  769,  770,  771,  772,  773,  774,  775,  776,  777,  778,  779,\n'
      '         780,  781,  782,  783,  784,  785,  786,  787,  788,  789,  790,  791,\n'
      '         792,  793,  794,  795,  796,  797,  798,  799,  800,  801,  802,  803,\n'
      '         804,  805,  806,  807,  808,  809,  810,  811,  812,  813,  814,  815,\n'
      '         816,  817,  818,  819,  820,  821,  822,  823,  824,  825,  826,  827,\n'
      '         828,  829,  830,  831,  832,  833,  834,  835,  836,  837,  838,  839,\n'
      '         840,  841,  842,  843,  844,  845,  846,  847,  848,  849,  850,  851,\n'
      '         852,  853,  854,  855,  856,  857,  858,  859,  860,  861,  862,  863,\n'
      '         864,  865,  866,  867,  868,  869,  870,  871,  872,  873,  874,  875,\n'
      '         876,  877,  878,  879,  880,  881,  882,  883,  884,  885,  886,  887,\n'
      '         888,  889,  890,  891,  892,  893,  894,  895,  896,  897,  898,  899,\n'
      '         900,  901,  902,  903,  904,  905,  906,  907,  908,  909,  910,  911,\n'
      '         912,  913,  914,  915,  916,  917,  918,  919,  920,  921,  922,  923,\n'
      '         924,  925,  926,  927,  928,  929,  930,  931,  932,  933,  934,  935,\n'
      '         936,  937,  938,  939,  940,  941,  942,  943,  944,  945,  946,  947,\n'
      '         948,  949,  950,  951,  952,  953,  954,  955,  956,  957,  958,  959,\n'
      '         960,  961,  962,  963,  964,  965,  966,  967,  968,  969,  970,  971,\n'
      '         972,  973,  974,  975,  976,  977,  978,  979,  980,  981,  982,  983,\n'
      '         984,  985,  986,  987,  988,  989,  990,  991,  992,  993,  994,  995,\n'
      '         996,  997,  998,  999, 1000])')),
    ({'linewidth': 40}, 'tgrad.arange(20.) / 3',
     ('tensor([0.0000, 0.3333, 0.6667, 1.0000,\n'
      '        1.3333, 1.6667, 2.0000, 2.3333,\n'
      '        2.6667, 3.0000, 3.3333, 3.6667,\n'
      '        4.0000, 4.3333, 4.6667, 5.0000,\n'
      '        5.3333, 5.6667, 6.0000, 6.3333])')),
    ({'linewidth': 40}, 'tgrad.arange(8., requires_grad=True) / 3',
     ('tensor([0.0000, 0.3333, 0.6667, 1.0000,\n'
      '        1.3333, 1.6667, 2.0000, 2.3333],\n'
      '       grad_fn=<DivBackward0>)')),
    ({'precision': 6, 'sci_mode': True}, 'tgrad.tensor([nan, 0.1])',
     'tensor([         nan, 1.000000e-01])'),
    ({'profile': 'short', 'precision': 5}, 'tgrad.tensor([1/3])',
     'tensor([0.33333])'),
    (None, 'tgrad.tensor([1.5, 2.])',
     'tensor([1.5000, 2.0000])'),
    (None, 'tgrad.tensor([1.5, 2.], dtype=tgrad.float32)',
     'tensor([1.5000, 2.0000], dtype=tgrad.float32)'),
    (None, 'tgrad.zeros(0, dtype=tgrad.float32)',
     'tensor([], dtype=tgrad.float32)'),
    (None, 'tgrad.zeros(0)',
     'tensor([])'),
    (None, 'tgrad.tensor(0.5)',
     'tensor(0.5000)'),
]


@pytest.mark.parametrize("options,expr,expected", OPTION_CASES,
                         ids=[f"{c[0]}-{c[1]}" for c in OPTION_CASES])
def test_repr_under_options_matches_pytorch(options, expr, expected, default_options):
    if options is None:
        tgrad.set_default_dtype(tgrad.float64)
    else:
        tgrad.set_printoptions(**options)
    assert repr(eval(expr, NAMES)) == expected


def test_set_printoptions_profiles_and_reset(default_options):
    from tgrad._tensor_str import get_printoptions
    assert get_printoptions() == dict(precision=4, threshold=1000, edgeitems=3, linewidth=80,
                                      sci_mode=None)
    tgrad.set_printoptions(profile="short", precision=3, sci_mode=True)
    assert get_printoptions() == dict(precision=3, threshold=1000, edgeitems=2, linewidth=80,
                                      sci_mode=True)
    tgrad.set_printoptions(linewidth=100)  # as PyTorch: omitting sci_mode resets it
    assert get_printoptions()["sci_mode"] is None
    tgrad.set_printoptions(profile="full")
    assert get_printoptions()["threshold"] == math.inf
    tgrad.set_printoptions(profile="default")
    assert repr(tgrad.tensor([1.12345])) == "tensor([1.1235])"
    with pytest.raises(ValueError, match="unknown profile 'long'"):
        tgrad.set_printoptions(profile="long")


def test_widths_agree_with_pythons_formatting():
    # A hand check independent of PyTorch: every fixed-point value of a tensor is Python's
    # f"{v:.4f}", right-aligned to the widest of them.
    vals = np.array([-12.5, 0.1875, 7.0, 100.25])  # max/min < 1000: fixed point
    want = [f"{v:.4f}".rjust(8) for v in vals]
    assert repr(tgrad.tensor(vals.tolist())) == "tensor([" + ", ".join(want) + "])"


def test_format_of_0d_tensor_and_parameter():
    assert f"{tgrad.tensor(2.0 / 3):.3f}" == "0.667"
    assert f"{tgrad.tensor([1.0, 2.0])}" == "tensor([1., 2.])"
    with pytest.raises(TypeError):
        f"{tgrad.tensor([1.0, 2.0]):.2f}"
    # As PyTorch: only a plain Tensor formats as its number; a Parameter as its repr.
    assert f"{nn.Parameter(tgrad.tensor(1.5))}" == \
        "Parameter containing:\ntensor(1.5000, requires_grad=True)"


def test_repr_reads_the_values_once(monkeypatch):
    calls = []
    numpy = Tensor.numpy

    def counting(self, *args, **kwargs):
        calls.append(1)
        return numpy(self, *args, **kwargs)

    monkeypatch.setattr(Tensor, "numpy", counting)
    repr(tgrad.arange(10000.).reshape(10, 10, 100).requires_grad_())
    assert len(calls) == 1


@pytest.mark.skipif(not tgrad.cuda.is_available(), reason="no CUDA device")
def test_cuda_repr_keeps_device_suffix_and_copies_once(monkeypatch):
    from tgrad.backends import get_backend
    t = tgrad.tensor([[1.5, -2.0], [3.0, 4.0]], device="cuda", requires_grad=True)
    backend = get_backend(t.device)
    calls = []
    to_host = backend.to_host

    def counting(x):
        calls.append(1)
        return to_host(x)

    monkeypatch.setattr(backend, "to_host", counting)
    assert repr(t) == (f"tensor([[ 1.5000, -2.0000],\n"
                       f"        [ 3.0000,  4.0000]], device='{t.device}', requires_grad=True)")
    assert len(calls) == 1
    assert repr(tgrad.zeros(0, 3, device="cuda")) == \
        f"tensor([], device='{t.device}', size=(0, 3))"


def test_return_types_print_as_pytorch_structseqs():
    # PyTorch's torch.return_types repr: the type's qualified name, then one "field=repr"
    # per line (torch.return_types.max(\nvalues=tensor(2.),\nindices=tensor(1)))
    x = tgrad.tensor([[1.0, 3.0], [4.0, 2.0]])
    r = x.max(1)
    assert type(r).__module__ == "tgrad.return_types" and type(r).__name__ == "max"
    assert repr(r) == ("tgrad.return_types.max(\n"
                       "values=tensor([3., 4.]),\n"
                       "indices=tensor([1, 0]))")
    assert str(x.sort(1)) == ("tgrad.return_types.sort(\n"
                              "values=tensor([[1., 3.],\n"
                              "        [2., 4.]]),\n"
                              "indices=tensor([[0, 1],\n"
                              "        [1, 0]]))")
    assert repr(tgrad.aminmax(x)) == ("tgrad.return_types.aminmax(\n"
                                      "min=tensor(1.),\n"
                                      "max=tensor(4.))")
    for op, args in [("min", (1,)), ("topk", (1,)), ("kthvalue", (1,)), ("median", (1,)),
                     ("nanmedian", (1,)), ("mode", (1,)), ("cummax", (1,)),
                     ("cummin", (1,))]:
        r = getattr(x, op)(*args)
        assert type(r) is getattr(tgrad.return_types, op)
        assert repr(r).startswith(f"tgrad.return_types.{op}(\nvalues=tensor(")
    assert type(tgrad.frexp(x)) is tgrad.return_types.frexp
    assert type(tgrad.histogram(x.flatten(), 2)) is tgrad.return_types.histogram


def test_linalg_return_types_print_as_pytorch_structseqs():
    # PyTorch 2.13: tgrad.linalg.<op> -> torch.return_types.linalg_<op>, the older top-level
    # names -> torch.return_types.<op>; named fields, unpacking, indexing and pickling kept.
    import pickle
    x = tgrad.tensor([[2.0, 1.0], [1.0, 2.0]], dtype=tgrad.float64)  # det 3, eigenvalues 1, 3
    # LU of x by hand: no row swap, L21 = 1/2, U22 = 2 - 1/2
    assert repr(tgrad.linalg.lu_factor(x)) == (
        "tgrad.return_types.linalg_lu_factor(\n"
        "LU=tensor([[2.0000, 1.0000],\n"
        "        [0.5000, 1.5000]], dtype=tgrad.float64),\n"
        "pivots=tensor([1, 2], dtype=tgrad.int32))")
    # log 3 = 1.0986...
    assert repr(tgrad.slogdet(x)) == ("tgrad.return_types.slogdet(\n"
                                      "sign=tensor(1., dtype=tgrad.float64),\n"
                                      "logabsdet=tensor(1.0986, dtype=tgrad.float64))")
    assert repr(x.slogdet()).startswith("tgrad.return_types.slogdet(\nsign=")
    assert repr(tgrad.linalg.slogdet(x)).startswith("tgrad.return_types.linalg_slogdet(\nsign=")
    # geqrf of [[3, 0], [4, 5]] by hand (dlarfg): beta = -5, tau = 8/5, v = 4/8; R = [[-5, -4],
    # [., 3]]
    a = tgrad.tensor([[3.0, 0.0], [4.0, 5.0]], dtype=tgrad.float64)
    assert repr(tgrad.geqrf(a)) == ("tgrad.return_types.geqrf(\n"
                                    "a=tensor([[-5.0000, -4.0000],\n"
                                    "        [ 0.5000,  3.0000]], dtype=tgrad.float64),\n"
                                    "tau=tensor([1.6000, 0.0000], dtype=tgrad.float64))")
    r = tgrad.linalg.eigh(x)
    assert type(r) is tgrad.return_types.linalg_eigh
    assert repr(r).startswith("tgrad.return_types.linalg_eigh(\n"
                              "eigenvalues=tensor([1., 3.], dtype=tgrad.float64),\n"
                              "eigenvectors=tensor([[")
    w, v = r
    assert w is r.eigenvalues is r[0] and v is r.eigenvectors is r[1]
    r2 = pickle.loads(pickle.dumps(r))
    assert type(r2) is tgrad.return_types.linalg_eigh
    np.testing.assert_array_equal(r2.eigenvalues.numpy(), [1.0, 3.0])
    lu_data, piv = tgrad.linalg.lu_factor(x)
    rt = tgrad.return_types
    cases = [
        (tgrad.linalg.eig(x), rt.linalg_eig, ("eigenvalues", "eigenvectors")),
        (tgrad.linalg.svd(x), rt.linalg_svd, ("U", "S", "Vh")),
        (tgrad.linalg.qr(x), rt.linalg_qr, ("Q", "R")),
        (tgrad.linalg.lu(x), rt.linalg_lu, ("P", "L", "U")),
        (tgrad.linalg.lu_factor_ex(x), rt.linalg_lu_factor_ex, ("LU", "pivots", "info")),
        (tgrad.linalg.inv_ex(x), rt.linalg_inv_ex, ("inverse", "info")),
        (tgrad.linalg.cholesky_ex(x), rt.linalg_cholesky_ex, ("L", "info")),
        (tgrad.linalg.solve_ex(x, x), rt.linalg_solve_ex, ("result", "info")),
        (tgrad.linalg.lstsq(x, x), rt.linalg_lstsq,
         ("solution", "residuals", "rank", "singular_values")),
        (tgrad.linalg.ldl_factor(x), rt.linalg_ldl_factor, ("LD", "pivots")),
        (tgrad.linalg.ldl_factor_ex(x), rt.linalg_ldl_factor_ex, ("LD", "pivots", "info")),
        (tgrad.qr(x), rt.qr, ("Q", "R")), (x.qr(), rt.qr, ("Q", "R")),
        (tgrad.svd(x), rt.svd, ("U", "S", "V")),
        (tgrad.lu_unpack(lu_data, piv), rt.lu_unpack, ("P", "L", "U")),
        (tgrad.triangular_solve(x, x), rt.triangular_solve, ("solution", "cloned_coefficient")),
    ]
    for res, typ, fields in cases:
        assert type(res) is typ and res._fields == fields, (typ, type(res))
        assert repr(res).startswith(f"tgrad.return_types.{typ.__name__}(\n{fields[0]}=")
        assert type(pickle.loads(pickle.dumps(res))) is typ
    assert type(tgrad.lu(x)) is tuple  # torch.lu: a plain tuple
    out = (tgrad.empty(2, dtype=tgrad.float64), tgrad.empty(2, 2, dtype=tgrad.float64))
    assert type(tgrad.linalg.eigh(x, out=out)) is rt.linalg_eigh
