"""A user's text drawn as typed: never mathematics or TeX, never hidden."""

TEX = {'\\': r'\textbackslash{}', '{': r'\{', '}': r'\}', '$': r'\$',
       '&': r'\&', '#': r'\#', '%': r'\%', '_': r'\_', '^': r'\^{}',
       '~': r'\~{}'}

#: Before a label starting with ``_``: a legend leaves such labels out.
SHOWN = '\u200b'  # zero-width space


def escape(text):
    """Returns ``str(text)`` with ``$`` (with ``text.usetex``, every TeX
    special) escaped and a leading ``_`` shown in a legend.

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
