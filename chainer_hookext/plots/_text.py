"""A user's text (a link's name, a key, a file name) as matplotlib draws
it: as typed, never read as mathematics or TeX, never hidden."""

#: What TeX reads as a command, and what writes each as typed (with
#: ``text.usetex``).
TEX = {'\\': r'\textbackslash{}', '{': r'\{', '}': r'\}', '$': r'\$',
       '&': r'\&', '#': r'\#', '%': r'\%', '_': r'\_', '^': r'\^{}',
       '~': r'\~{}'}

#: Before a label starting with ``_``: a legend leaves such labels out.
SHOWN = '\u200b'  # zero-width space


def escape(text):
    """Returns ``text`` (any value, as ``str``) escaped for matplotlib.

    Every ``$`` is escaped (a pair would be drawn as mathematics,
    ``cost$x_$``), or with ``rcParams['text.usetex']`` every character TeX
    reads; a leading ``_`` gets a zero-width space before it.  Each string
    a picture draws from the user's data goes through it.

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
