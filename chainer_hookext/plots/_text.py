"""A user's text (a link's name, a key, a file name) as matplotlib draws
it: as typed, never read as mathematics or TeX, never hidden."""

#: TeX's special characters, as typed (with ``text.usetex``).
TEX = {'\\': r'\textbackslash{}', '{': r'\{', '}': r'\}', '$': r'\$',
       '&': r'\&', '#': r'\#', '%': r'\%', '_': r'\_', '^': r'\^{}',
       '~': r'\~{}'}

#: Before a label starting with ``_``: a legend leaves such labels out.
SHOWN = '\u200b'  # zero-width space


def escape(text):
    """Returns ``str(text)`` drawn as typed: ``$`` (or with ``text.usetex``
    every TeX special) escaped, a leading ``_`` shown in a legend.

    >>> escape('cost$x_$')
    'cost\\\\$x_\\\\$'
    """
    from matplotlib import rcParams
    text = str(text)
    if rcParams['text.usetex']:
        text = ''.join(TEX.get(c, c) for c in text)
    else:
        text = text.replace('$', r'\$')
    return SHOWN + text if text.startswith('_') else text
