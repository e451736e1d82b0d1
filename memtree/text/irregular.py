"""English irregular verbs: each common past form and the verb it is a form of (memtree.text.terms).

Why: "What did Elise buy?" asks what a note says as "Elise bought …": a past form stems as its verb
does (``bought`` → ``buy``). Left out, a form that is more often a word of its own: bit (a bit),
won (the currency), left, rose, lay, ground, bore, saw, fell, found. Data only: no imports.
"""

IRREGULAR = {
    past: base
    for entry in """arise:arose,arisen awake:awoke,awoken become:became begin:began,begun bend:bent bleed:bled
        blow:blew,blown break:broke,broken breed:bred bring:brought build:built burn:burnt buy:bought
        catch:caught choose:chose,chosen come:came creep:crept deal:dealt dig:dug draw:drew,drawn
        dream:dreamt drink:drank,drunk drive:drove,driven eat:ate,eaten feed:fed feel:felt fight:fought
        fly:flew,flown forget:forgot,forgotten forgive:forgave,forgiven freeze:froze,frozen get:got,gotten
        give:gave,given go:went,gone grow:grew,grown hang:hung hear:heard hide:hid,hidden hold:held keep:kept
        know:knew,known lead:led learn:learnt lend:lent lose:lost make:made mean:meant meet:met pay:paid
        ride:rode,ridden ring:rang,rung run:ran sell:sold send:sent shake:shook,shaken shoot:shot show:shown
        sing:sang,sung sink:sank,sunk sit:sat sleep:slept speak:spoke,spoken spend:spent stand:stood
        steal:stole,stolen stick:stuck strike:struck swear:swore,sworn sweep:swept swim:swam,swum
        take:took,taken teach:taught tear:tore,torn tell:told think:thought throw:threw,thrown
        understand:understood wake:woke,woken wear:wore,worn write:wrote,written""".split()
    for base, forms in [entry.split(":")]
    for past in forms.split(",")
}
